// Starts Swagger UI on a service's /docs page. A file of its own, not an inline script, so helmet's
// Content-Security-Policy (script-src 'self') lets it run.
/* global window, document, SwaggerUIBundle */
window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: document.body.dataset.spec,
    dom_id: '#swagger-ui',
    deepLinking: true,
    // The online validator badge would call a third-party host.
    validatorUrl: null,
    defaultModelsExpandDepth: 0,
    displayRequestDuration: true,
  });
});
