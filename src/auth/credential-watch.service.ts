import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { ApiKeysRepository } from './api-keys.repository';
import type { Principal } from './principal';

/** What a long answer holds while it lasts: `signal` aborts when its credential is no longer accepted. */
export interface CredentialLease {
  readonly signal: AbortSignal;
  /**
   * Whether the guard would accept the credential now (a key: asked of the database at once, not at
   * the next heartbeat; `signal` aborts when not). For an answer about to hand over what a refused
   * credential must not read, such as a tool's result: a heartbeat is too late for that.
   */
  accepted(): Promise<boolean>;
  /**
   * The API key the answer was opened with. A stream also asks in each read whether it is still
   * live (liveKeySql): a revocation committed on another node is only heard of at the next check.
   */
  readonly keyId?: string;
  /** The answer ended: stop watching for it. */
  release(): void;
}

// setTimeout's longest delay; a later expiry is reached in steps.
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The guard checks a credential once, at the request; an event stream lasts for hours. This ends
 * the stream when the guard would refuse it: an API key revoked since (at once when the
 * revocation commits on this node, RevokedKeyLeases; revoked through another node, at the
 * stream's next read or else at the next heartbeat, every watched key checked in one query), an
 * API key given an expiry, or an identity provider's token, past it (a timer, to the second the
 * guard stops accepting it). The platform token is configuration: nothing to watch.
 */
@Injectable()
export class CredentialWatch implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(CredentialWatch.name);
  private readonly byKey = new Map<string, Set<AbortController>>();
  private timer?: NodeJS.Timeout;
  /** A key check is running: checks that come while the database is slow do not queue more. */
  private checking = false;

  constructor(
    private readonly keys: ApiKeysRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    this.timer = setInterval(() => void this.check(), this.config.events.heartbeatMs);
    this.timer.unref();
  }

  onModuleDestroy(): void {
    clearInterval(this.timer);
  }

  watch(principal: Principal): CredentialLease {
    const controller = new AbortController();
    let stop = (): void => undefined;
    if (principal.type === 'api_key') {
      const id = principal.id;
      let set = this.byKey.get(id);
      if (!set) this.byKey.set(id, (set = new Set()));
      set.add(controller);
      // A key given an expiry ends what it opened to the second, as an identity provider's token does.
      const expiring = principal.expiresAt === undefined ? undefined : abortAt(principal.expiresAt, controller);
      stop = () => {
        expiring?.();
        set.delete(controller);
        if (set.size === 0 && this.byKey.get(id) === set) this.byKey.delete(id);
      };
    } else if (principal.type === 'oidc') {
      stop = abortAt(principal.expiresAt, controller);
    }
    let released = false;
    return {
      signal: controller.signal,
      accepted: async () => {
        if (!controller.signal.aborted && principal.type === 'api_key' && (await this.keys.liveKeys([principal.id])).length === 0) controller.abort();
        if (principal.type === 'oidc' && Date.now() >= principal.expiresAt) controller.abort();
        return !controller.signal.aborted;
      },
      ...(principal.type === 'api_key' ? { keyId: principal.id } : {}),
      release: () => {
        if (released) return;
        released = true;
        stop();
      },
    };
  }

  /** Ends what was opened with this key, now: its revocation committed. */
  revoked(keyId: string): void {
    for (const controller of this.byKey.get(keyId) ?? []) controller.abort();
  }

  /** Ends what was opened with a key revoked since; only the keys asked about (one watched meanwhile was just accepted by the guard). */
  async check(): Promise<void> {
    if (this.checking || this.byKey.size === 0) return;
    const asked = [...this.byKey.keys()];
    this.checking = true;
    try {
      const live = new Set(await this.keys.liveKeys(asked));
      for (const id of asked) {
        if (live.has(id)) continue;
        for (const controller of this.byKey.get(id) ?? []) controller.abort();
      }
    } catch (err) {
      this.logger.warn(`checking the keys of open streams failed: ${(err as Error).message}`);
    } finally {
      this.checking = false;
    }
  }
}

function abortAt(at: number, controller: AbortController): () => void {
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    const left = at - Date.now();
    if (left <= 0) return controller.abort();
    timer = setTimeout(arm, Math.min(left, MAX_TIMER_MS));
    timer.unref();
  };
  arm();
  return () => clearTimeout(timer);
}
