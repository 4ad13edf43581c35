/**
 * `value` as one safe line of terminal text: control characters (escape sequences a hostile server
 * could send to move the cursor or rewrite the screen, newlines) become `?`, and at most `max`
 * characters are kept (default 500). For the text agent-pay builds from a server's answer; bodies are
 * printed as JSON, which escapes them already.
 */
export function printable(value: unknown, max = 500): string {
  // eslint-disable-next-line no-control-regex -- control characters are what is removed
  const text = String(value).replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
