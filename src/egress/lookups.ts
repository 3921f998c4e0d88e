import { AsyncLocalStorage } from 'node:async_hooks';
import { lookup as dnsLookup, LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { buildConnector } from 'undici';
import { LruCache } from '../common/lru-cache';
import { OrgGate } from '../common/org-gate';

/** getaddrinfo with every address, as `dns.lookup(host, { all: true, family })` calls back. */
export type Resolve = (
  hostname: string,
  options: { all: true; family: number },
  callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

/**
 * libuv's threadpool: 4 threads unless UV_THREADPOOL_SIZE says otherwise, read once when the
 * process first uses it.
 */
function threadpoolSize(): number {
  const n = Number(process.env.UV_THREADPOOL_SIZE);
  return Number.isInteger(n) && n > 0 ? n : 4;
}

/** Lookups of outbound hosts in flight at once on a node: half the threadpool, at least one. */
export const MAX_LOOKUPS_IN_FLIGHT = Math.max(1, Math.floor(threadpoolSize() / 2));
/** One organization's lookups in flight at once on a node; the others wait their turn. */
export const LOOKUPS_PER_ORG = 1;

/**
 * The host names outbound connections resolve, in turns. getaddrinfo runs on libuv's threadpool,
 * which the whole process shares (every organization's outbound hosts, `pg` and Redis connecting by
 * name, async fs and crypto), and a name whose authoritative server never answers holds a thread
 * for the resolver's timeout (glibc: 5 s, twice): one admin saving 16 webhooks under such a zone
 * left another organization's URL saves unanswered for a minute, and 96 for 7.5 minutes, the
 * lookups queued behind them in libuv (attack round 11, F-F3). Now at most MAX_LOOKUPS_IN_FLIGHT
 * lookups of outbound hosts run at once, one of them an organization's, the rest of the pool left
 * to everything else; a lookup that started keeps its turn until getaddrinfo returns, whoever still
 * waits for it, and one that cannot start or finish within `waitMs` fails EAI_AGAIN for its caller.
 */
export class Lookups {
  /** Whose connection is being opened: a socket's lookup is told only the host name. */
  readonly owner = new AsyncLocalStorage<string | undefined>();
  private readonly orgs: OrgGate;
  private readonly node: OrgGate;
  /** Lookups started (getaddrinfo called) by family and name, until they settle: anyone's asks join them. */
  private readonly inFlight = new Map<string, Promise<LookupAddress[]>>();
  /** Lookups asked for, by organization, family and name, until they settle: the same organization's asks join them. */
  private readonly queued = new Map<string, Promise<LookupAddress[]>>();

  constructor(
    private readonly waitMs: number,
    max = MAX_LOOKUPS_IN_FLIGHT,
    perOrg = LOOKUPS_PER_ORG,
    // Read at each call, so a test may stand in for the resolver.
    private readonly resolve: Resolve = (hostname, options, callback) => dnsLookup(hostname, options, callback),
  ) {
    this.orgs = new OrgGate(perOrg);
    this.node = new OrgGate(max);
  }

  /**
   * Every address of `hostname` (of `family`, 0 for both), for `org` (default: the connection's
   * owner, if known). Asks for a name already being looked up join that lookup, so an
   * organization's connections opened at once to one vendor's host take one turn, not one each.
   * Another organization's lookup is joined only once it has started: one still waiting for its
   * organization's turn would make everyone asking for the same name (a popular vendor's host)
   * wait behind that organization's slow names.
   */
  all(hostname: string, family = 0, org: string | undefined = this.owner.getStore()): Promise<LookupAddress[]> {
    const key = `${family}\n${hostname}`;
    const started = this.inFlight.get(key);
    if (started) return started;
    const mine = `${org ?? ''}\n${key}`;
    const queued = this.queued.get(mine);
    if (queued) return queued;
    const lookup = this.inTurn(hostname, family, org, key).finally(() => this.queued.delete(mine));
    this.queued.set(mine, lookup);
    return lookup;
  }

  private async inTurn(hostname: string, family: number, org: string | undefined, key: string): Promise<LookupAddress[]> {
    const deadline = Date.now() + this.waitMs;
    const signal = AbortSignal.timeout(this.waitMs);
    let leaveOrg = () => undefined as void;
    let leaveNode: () => void;
    try {
      if (org !== undefined) leaveOrg = await this.orgs.enter(org, signal);
      leaveNode = await this.node.enter('', signal);
    } catch {
      leaveOrg();
      throw noAnswer(hostname, this.waitMs);
    }
    // Started by another organization while this one waited for its turn: that lookup is the answer.
    const meanwhile = this.inFlight.get(key);
    if (meanwhile) {
      leaveNode();
      leaveOrg();
      return meanwhile;
    }
    const lookup = this.resolveBy(hostname, family, deadline, () => {
      leaveNode();
      leaveOrg();
    }).finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, lookup);
    return lookup;
  }

  /** getaddrinfo, failing EAI_AGAIN at `deadline`; `done` when it returns (its thread is free then, not before). */
  private resolveBy(hostname: string, family: number, deadline: number, done: () => void): Promise<LookupAddress[]> {
    return new Promise<LookupAddress[]>((resolve, reject) => {
      let late = false;
      const timer = setTimeout(
        () => {
          late = true;
          reject(noAnswer(hostname, this.waitMs));
        },
        Math.max(0, deadline - Date.now()),
      );
      timer.unref();
      this.resolve(hostname, { all: true, family }, (err, addresses) => {
        done();
        clearTimeout(timer);
        if (late) return;
        if (err) reject(err);
        else resolve(addresses);
      });
    });
  }
}

/** As getaddrinfo says a server did not answer, so callers treat it as any name that does not resolve now. */
function noAnswer(hostname: string, ms: number): NodeJS.ErrnoException {
  return Object.assign(new Error(`getaddrinfo EAI_AGAIN ${hostname} (not resolved within ${ms} ms)`), { code: 'EAI_AGAIN', syscall: 'getaddrinfo', hostname });
}

/**
 * undici's connector, with the socket's lookup for the port it connects to: a lookup is told the
 * host alone, and a host listed at some ports only (EGRESS_ALLOWED_HOSTS `host:port`) is allowed
 * at those only. One connector per port (its TLS session cache with it), the least recently used
 * dropped past 1,000.
 */
export function connectorsByPort(timeout: number, lookupAt: (port: number) => LookupFunction): buildConnector.connector {
  const byPort = new LruCache<number, buildConnector.connector>(1000);
  return (options, callback) => {
    const port = Number(options.port) || (options.protocol === 'http:' ? 80 : 443);
    let connect = byPort.get(port);
    if (!connect) byPort.set(port, (connect = buildConnector({ timeout, lookup: lookupAt(port) })));
    connect(options, callback);
  };
}
