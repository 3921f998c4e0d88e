import { createLocalJWKSet, errors, type CryptoKey, type JSONWebKeySet, type JWSHeaderParameters } from 'jose';

/** Reads a JSON document from the provider (through the egress policy, size-capped). */
export type JsonFetcher = (url: string) => Promise<unknown>;

export interface KeyStoreOptions {
  /** Exactly as the tokens' `iss` names it; the discovery document must name the same. */
  issuer: string;
  fetchJson: JsonFetcher;
  /** The least time between two fetches, whatever arrives meanwhile. */
  refreshCooldownMs: number;
  /** Keys older than this are fetched again (within the cooldown) before they are used. */
  maxAgeMs: number;
  /** A fetch (discovery and keys) not done by then counts as failed, whatever the fetcher does; unset: none. */
  fetchTimeoutMs?: number;
  now?: () => number;
  /** Told once per failed fetch (so at most once per cooldown), not once per token refused meanwhile. */
  onFetchError?: (message: string) => void;
}

/** The provider's keys could not be had (unreachable, or it answered nonsense). Not the token's fault. */
export class KeysUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KeysUnavailableError';
  }
}

interface KeySet {
  resolve: ReturnType<typeof createLocalJWKSet>;
  fetchedAt: number;
}

/**
 * The identity provider's signing keys: discovered, cached, and fetched again when a token names a
 * `kid` the cache lacks (key rotation) or when they grow old. Fetches are rate-limited: however
 * many tokens with unknown `kid`s arrive, the provider is asked at most once per cooldown, and
 * concurrent askers share that one fetch. A failed fetch counts too, so a provider that is down
 * is not hammered either; the keys already held stay in use meanwhile.
 */
export class OidcKeyStore {
  private keys?: KeySet;
  private inFlight?: Promise<void>;
  private lastFetchAt = -Infinity;
  private lastError?: string;
  /** How many times the provider was asked (discovery and keys count as one); for tests and metrics. */
  fetches = 0;

  constructor(private readonly options: KeyStoreOptions) {}

  /** The key resolver `jwtVerify` takes: the key the header names, or a refusal. */
  readonly resolve = async (header: JWSHeaderParameters): Promise<CryptoKey> => {
    const now = this.now();
    if (!this.keys) await this.refresh();
    else if (now - this.keys.fetchedAt >= this.options.maxAgeMs) {
      // Old keys are fetched again before they are used, so a key the provider withdrew stops
      // working. A provider whose last fetch failed is not waited on again (a hung one cost every
      // sign-in 10 s, each cooldown, to end on the keys held anyway): they serve while it is retried.
      if (this.lastError === undefined) await this.refresh();
      else void this.refresh();
    }
    const keys = this.keys;
    if (!keys) throw new KeysUnavailableError(`the identity provider's keys could not be fetched: ${this.lastError ?? 'not yet fetched'}`);
    try {
      return await keys.resolve(header);
    } catch (err) {
      if (!(err instanceof errors.JWKSNoMatchingKey)) throw err;
      // Perhaps rotated: fetch again, unless that was done a moment ago (then the kid is simply unknown).
      if (!(await this.refresh()) || this.keys === keys) throw err;
      return this.keys!.resolve(header);
    }
  };

  /**
   * Fetches the keys again (within the cooldown, as for an unknown `kid`) for a token that names no
   * `kid` and that no key held verifies: the provider may sign with a key published since, and
   * nothing else would ask for it before the keys grow old. True when other keys are held now.
   */
  async fetchAgain(): Promise<boolean> {
    const before = this.keys;
    await this.refresh();
    return this.keys !== undefined && this.keys !== before;
  }

  /** Fetches discovery and keys unless that was done within the cooldown; true when a fetch ran (or was joined). */
  private async refresh(): Promise<boolean> {
    if (this.inFlight) {
      await this.inFlight;
      return true;
    }
    const now = this.now();
    if (now - this.lastFetchAt < this.options.refreshCooldownMs) return false;
    this.lastFetchAt = now;
    this.fetches++;
    this.inFlight = this.withinTimeout(this.fetchKeys())
      .then((keys) => {
        this.keys = keys;
        this.lastError = undefined;
      })
      .catch((err: unknown) => {
        this.lastError = err instanceof Error ? err.message : String(err);
        this.options.onFetchError?.(this.lastError);
      })
      .finally(() => {
        this.inFlight = undefined;
      });
    await this.inFlight;
    return true;
  }

  /**
   * Every sign-in waits on the one fetch in flight: one that never settled would hold them all,
   * past the provider's recovery, until a restart. Past the limit it fails, and the next refresh
   * (after the cooldown) tries again.
   */
  private withinTimeout(fetching: Promise<KeySet>): Promise<KeySet> {
    const limit = this.options.fetchTimeoutMs;
    if (limit === undefined) return fetching;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new KeysUnavailableError(`the identity provider did not answer within ${limit} ms`)), limit);
    });
    fetching.catch(() => undefined);
    return Promise.race([fetching, late]).finally(() => clearTimeout(timer));
  }

  private async fetchKeys(): Promise<KeySet> {
    const { issuer, fetchJson } = this.options;
    const discoveryUrl = `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
    const discovery = await fetchJson(discoveryUrl);
    if (!isRecord(discovery)) throw new KeysUnavailableError(`${discoveryUrl} is not a JSON object`);
    // OpenID Connect Discovery 1.0, section 4.3: the document must name exactly the issuer asked about.
    if (discovery.issuer !== issuer) throw new KeysUnavailableError(`${discoveryUrl} names issuer ${JSON.stringify(discovery.issuer)}, not ${issuer}`);
    const jwksUri = discovery.jwks_uri;
    if (typeof jwksUri !== 'string' || !/^https?:\/\//.test(jwksUri)) throw new KeysUnavailableError(`${discoveryUrl} has no jwks_uri`);
    const jwks = await fetchJson(jwksUri);
    if (!isRecord(jwks) || !Array.isArray(jwks.keys)) throw new KeysUnavailableError(`${jwksUri} is not a JSON Web Key Set`);
    // Only public signing keys: a symmetric (`oct`) key in a public document would let anyone sign.
    const keys = jwks.keys.filter((k) => isRecord(k) && (k.kty === 'RSA' || k.kty === 'EC' || k.kty === 'OKP') && k.d === undefined && k.use !== 'enc');
    return { resolve: createLocalJWKSet({ keys } as JSONWebKeySet), fetchedAt: this.now() };
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
