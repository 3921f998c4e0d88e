/**
 * The headers of a page people type a credential into (the console, the API docs): it runs its
 * own files only, nothing may frame it (clickjacking an "Approve" or "Execute" button), and it
 * sends no referrer. One builder, so a tightening reaches both pages; what a page needs beyond
 * it is asked for by name, and visible at the call.
 */
export interface PageAllowances {
  /** Inline `<style>` blocks and `style` attributes (Swagger UI needs them; the console does not). */
  inlineStyles?: boolean;
  /** Fonts from `data:` URLs. */
  dataFonts?: boolean;
}

export function pageSecurityHeaders(allow: PageAllowances = {}): Readonly<Record<string, string>> {
  return Object.freeze({
    'content-security-policy': [
      "default-src 'self'",
      "script-src 'self'",
      allow.inlineStyles ? "style-src 'self' 'unsafe-inline'" : "style-src 'self'",
      "img-src 'self' data:",
      "connect-src 'self'",
      allow.dataFonts ? "font-src 'self' data:" : "font-src 'self'",
      "object-src 'none'",
      "base-uri 'none'",
      "form-action 'self'",
      "frame-ancestors 'none'",
    ].join('; '),
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    'referrer-policy': 'no-referrer',
    'cross-origin-opener-policy': 'same-origin',
  });
}
