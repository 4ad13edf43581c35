// Starts Scalar's API reference on a service's /docs page. A file of its own, not an inline script, so
// helmet's Content-Security-Policy (script-src 'self') lets it run. Nothing leaves the service: no web
// fonts (the system's are used), no telemetry, no AI agent, no proxy; the page follows the system's
// light or dark mode until the reader switches it. The code samples are the document's x-codeSamples.
/* global window, document, Scalar */
window.addEventListener('load', function () {
  var dark = window.matchMedia && window.matchMedia('(prefers-color-scheme: dark)').matches;
  Scalar.createApiReference('#app', {
    url: document.body.dataset.openapiUrl,
    withDefaultFonts: false,
    telemetry: false,
    agent: { disabled: true },
    mcp: { disabled: true },
    showDeveloperTools: 'never',
    darkMode: dark,
    defaultOpenAllTags: true,
    // Only the document's own x-codeSamples (curl, TypeScript, Python): the generated clients would
    // send a paid operation's x402 header as if it were a key.
    hiddenClients: true,
  });
});
