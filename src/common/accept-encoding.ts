/**
 * Whether a request's `Accept-Encoding` (RFC 9110 12.5.3) takes gzip: `gzip` or `x-gzip`, or `*`
 * when gzip is not named, with a weight above zero. A missing header means no preference, which we
 * answer with the identity coding: a client that did not ask is not made to decode.
 */
export function acceptsGzip(header: string | string[] | undefined): boolean {
  const value = Array.isArray(header) ? header.join(',') : header;
  if (!value || value.length > 1024) return false;
  let named: boolean | undefined;
  let any: boolean | undefined;
  for (const part of value.split(',')) {
    const [token, ...params] = part.split(';');
    const coding = token.trim().toLowerCase();
    if (coding !== 'gzip' && coding !== 'x-gzip' && coding !== '*') continue;
    let weight = 1;
    for (const p of params) {
      const [name, raw] = p.split('=');
      if (name?.trim().toLowerCase() === 'q') weight = Number(raw?.trim());
    }
    const ok = Number.isFinite(weight) && weight > 0 && weight <= 1;
    if (coding === '*') any = ok;
    else named = named === true || ok;
  }
  return named ?? any ?? false;
}
