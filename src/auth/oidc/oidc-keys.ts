import { createLocalJWKSet, errors, type CryptoKey, type JSONWebKeySet, type JWSHeaderParameters } from 'jose';
import { createPublicKey, type JsonWebKey } from 'node:crypto';

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
  /** Told, once per fetch, of the keys of the set that are not used (see verifiesCheaply). */
  onIgnoredKeys?: (message: string) => void;
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
    const listed = jwks.keys.filter((k) => isRecord(k) && (k.kty === 'RSA' || k.kty === 'EC' || k.kty === 'OKP') && k.d === undefined && k.use !== 'enc');
    const keys = listed.slice(0, MAX_PROVIDER_KEYS).filter(verifiesCheaply);
    if (keys.length < listed.length) {
      this.options.onIgnoredKeys?.(
        `${listed.length - keys.length} of the ${listed.length} signing keys of ${jwksUri} are not used (past the first ${MAX_PROVIDER_KEYS}, not a public key, RSA under 2048 or over 8192 bits, or an RSA exponent over 256 bits)`,
      );
    }
    return { resolve: createLocalJWKSet({ keys } as JSONWebKeySet), fetchedAt: this.now() };
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }
}

/**
 * The most signing keys of the provider's set that are held: providers publish a handful (two or
 * three during a rotation). Each is looked at once per fetch; past it they are not used.
 */
export const MAX_PROVIDER_KEYS = 100;

/**
 * A key a token can be verified with, at the cost of an ordinary verification. jose imports a key
 * when a token names it and does not remember a failed import, and a token naming no `kid` is tried
 * against every key of its algorithm that imports: a provider listing 3,000 EC keys off their curve
 * made each stranger's forged token hold the event loop 150 ms, trying them all again (attack
 * round 20, AB-F1). An RSA key jose refuses to verify with (under 2048 bits) ended the tries on it
 * with a TypeError, refusing tokens of the key listed after it; one whose public exponent is as
 * long as its modulus made each verification a full exponentiation, 30 times 65537's (AB-F2).
 * FIPS 186-5 bounds an exponent below 2^256; providers use 65537.
 */
function verifiesCheaply(jwk: Record<string, unknown>): boolean {
  let key;
  try {
    key = createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' });
  } catch {
    return false;
  }
  if (key.type !== 'public') return false;
  if (key.asymmetricKeyType !== 'rsa') return true;
  const { modulusLength = 0, publicExponent = 0n } = key.asymmetricKeyDetails ?? {};
  return modulusLength >= 2048 && modulusLength <= 8192 && publicExponent < 2n ** 256n;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
