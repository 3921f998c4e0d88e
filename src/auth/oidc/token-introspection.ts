import { createHash } from 'node:crypto';
import { LruCache } from '../../common/lru-cache';

/** The provider's introspection endpoint could not say (down, slow, not JSON): the token is refused `503`, not taken. */
export class IntrospectionUnavailableError extends Error {}

export interface IntrospectionSettings {
  url: string;
  clientId: string;
  clientSecret: string;
  /** How long an answer stands for its token (never past the token's end); 0: asked every time. */
  cacheMs: number;
}

/** One POST of the endpoint's form; answers the response's status and its body as text (bounded by the caller). */
export type PostForm = (url: string, headers: Record<string, string>, body: string) => Promise<{ status: number; text: string }>;

/** Tokens whose answer is held at once; past it the least recently used are asked again. */
const CACHED_TOKENS = 10_000;

/**
 * Token introspection (RFC 7662): whether the identity provider still holds a token it signed as
 * active. A signature and `exp` say only that the provider issued the token and when it ends; a
 * person the organization removed kept every token until then (docs/security.md, "Not yet
 * defended" until session 46). Only tokens that verified reach here, so a stranger makes the node
 * ask nothing; each token is asked once per `cacheMs` (and once for callers asking at the same
 * moment), its answer held under its SHA-256, never the token itself.
 *
 * What it deliberately does not do: take a token the endpoint could not answer for (it fails
 * closed, as the key set does), nor look at anything in the answer but `active` (the verified JWT's
 * claims decide the principal; an answer naming other claims is not merged into it).
 */
export class TokenIntrospection {
  private readonly answers = new LruCache<string, { active: boolean; until: number }>(CACHED_TOKENS);
  private readonly asking = new Map<string, Promise<boolean>>();
  private readonly authorization: string;

  constructor(
    private readonly settings: IntrospectionSettings,
    private readonly post: PostForm,
  ) {
    // RFC 6749 2.3.1: each part form-encoded before the Basic scheme's base64.
    const part = (s: string) => encodeURIComponent(s).replace(/%20/g, '+');
    this.authorization = `Basic ${Buffer.from(`${part(settings.clientId)}:${part(settings.clientSecret)}`).toString('base64')}`;
  }

  /** Whether the provider holds `token` active; `endsAt` is the token's end (ms), past which no answer is kept. */
  async isActive(token: string, endsAt: number): Promise<boolean> {
    const key = createHash('sha256').update(token).digest('base64url');
    const held = this.answers.get(key);
    if (held && held.until > Date.now()) return held.active;
    let asked = this.asking.get(key);
    if (!asked) {
      asked = this.ask(token).finally(() => this.asking.delete(key));
      this.asking.set(key, asked);
    }
    const active = await asked;
    const until = Math.min(Date.now() + this.settings.cacheMs, endsAt);
    if (this.settings.cacheMs > 0) this.answers.set(key, { active, until });
    return active;
  }

  private async ask(token: string): Promise<boolean> {
    const body = new URLSearchParams({ token, token_type_hint: 'access_token' }).toString();
    const answer = await this.post(
      this.settings.url,
      { authorization: this.authorization, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body,
    );
    if (answer.status !== 200) throw new IntrospectionUnavailableError(`the introspection endpoint answered ${answer.status}`);
    let parsed: unknown;
    try {
      parsed = JSON.parse(answer.text);
    } catch {
      throw new IntrospectionUnavailableError('the introspection endpoint did not answer JSON');
    }
    const active = typeof parsed === 'object' && parsed !== null ? (parsed as { active?: unknown }).active : undefined;
    if (typeof active !== 'boolean') throw new IntrospectionUnavailableError('the introspection endpoint answered no boolean "active"');
    return active;
  }
}
