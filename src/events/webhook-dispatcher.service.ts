import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { Webhook } from 'standardwebhooks';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { EgressRefusedError } from '../egress/egress-policy';
import { EgressService } from '../egress/egress.service';
import { Metrics } from '../telemetry/metrics';
import { SecretOpenError, SecretsService } from '../secrets/secrets.service';
import { EventWakeups } from './event-wakeups.service';
import { detachedFromCaller } from '../telemetry/trace-context';
import { nextAttemptAt } from './webhook-schedule';
import { AttemptOutcome, ClaimedDelivery, WebhookDeliveriesRepository } from './webhook-deliveries.repository';

/** Attempts one node makes at the same time. */
export const MAX_IN_FLIGHT = 16;
/** Attempts to one endpoint at the same time, per node: a hung receiver takes at most these slots. */
export const MAX_IN_FLIGHT_PER_ENDPOINT = 2;
/**
 * Attempts of one organization at the same time, per node: its hung receivers (50 endpoints, two
 * slots each) held every slot, and other organizations' first attempts waited for minutes.
 */
export const MAX_IN_FLIGHT_PER_ORG = 4;
/** A claimed attempt's lease runs this long past its timeout before another node may make the next attempt. */
const LEASE_GRACE_MS = 30_000;
/** How long a stopping node waits for attempts in flight before it cuts them (they are retried). */
const STOP_GRACE_MS = 3_000;
const ERROR_MAX_CHARS = 300;
/**
 * Commits wake the dispatcher at most this often: under load every request commits events, and
 * a claim per commit would be a query per request even for organizations without webhooks.
 */
const WAKE_COALESCE_MS = 50;
/** How often a node removes replaced signing secrets past their expiry. */
const FORGET_SECRETS_EVERY_MS = 60_000;

/**
 * Delivers the webhook outbox: claims due deliveries (any number of nodes, each attempt claimed
 * once), POSTs each through the egress policy with a timeout, records the outcome, and schedules
 * the next attempt with backoff. No database connection is held while a receiver answers: the
 * claim and the outcome are separate statements. Woken when events are committed (here or on
 * another node) and every `events.pollMs` for retries that have come due.
 */
@Injectable()
export class WebhookDispatcher implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(WebhookDispatcher.name);
  private readonly inFlight = new Map<string, Promise<void>>();
  private readonly perEndpoint = new Map<string, number>();
  private readonly perOrg = new Map<string, number>();
  private readonly stopping = new AbortController();
  private running?: Promise<void>;
  private again = false;
  private stopped = false;
  private pollTimer?: NodeJS.Timeout;
  private dueTimer?: NodeJS.Timeout;
  private wakeTimer?: NodeJS.Timeout;
  private unsubscribe?: () => void;
  private secretsForgottenAt = 0;

  constructor(
    private readonly repo: WebhookDeliveriesRepository,
    private readonly wakeups: EventWakeups,
    private readonly secrets: SecretsService,
    private readonly egress: EgressService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly metrics: Metrics,
  ) {}

  onModuleInit(): void {
    this.unsubscribe = this.wakeups.on(() => {
      if (this.wakeTimer) return;
      this.wakeTimer = setTimeout(() => {
        this.wakeTimer = undefined;
        this.kick();
      }, WAKE_COALESCE_MS);
      this.wakeTimer.unref();
    });
    this.pollTimer = setInterval(() => {
      this.kick();
      this.forgetExpiredSecrets();
    }, this.config.events.pollMs);
    this.pollTimer.unref();
    this.kick();
  }

  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    clearInterval(this.pollTimer);
    clearTimeout(this.dueTimer);
    clearTimeout(this.wakeTimer);
    await this.running;
    const pending = [...this.inFlight.values()];
    const cut = setTimeout(() => this.stopping.abort(new Error('the server is stopping')), STOP_GRACE_MS);
    await Promise.allSettled(pending);
    clearTimeout(cut);
    this.stopping.abort();
  }

  /** At most once a minute per node: a secret past its expiry no longer signs anything (the claim checks the expiry), this only removes it. */
  private forgetExpiredSecrets(): void {
    if (Date.now() - this.secretsForgottenAt < FORGET_SECRETS_EVERY_MS) return;
    this.secretsForgottenAt = Date.now();
    this.repo.forgetExpiredSecrets().catch((err) => this.logger.warn(`removing expired webhook secrets failed: ${(err as Error).message}`));
  }

  /** Looks for due deliveries now (coalesced: a kick during a round makes one more round). */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    // A kick comes from whichever request's commit woke it; the deliveries are every organization's.
    this.running = detachedFromCaller(() => this.rounds()).finally(() => (this.running = undefined));
  }

  private async rounds(): Promise<void> {
    do {
      this.again = false;
      try {
        await this.round();
      } catch (err) {
        this.logger.warn(`claiming webhook deliveries failed: ${(err as Error).message}`);
        return;
      }
    } while (this.again && !this.stopped);
  }

  private async round(): Promise<void> {
    for (;;) {
      const free = MAX_IN_FLIGHT - this.inFlight.size;
      if (free <= 0 || this.stopped) return;
      const busy = [...this.perEndpoint].filter(([, n]) => n >= MAX_IN_FLIGHT_PER_ENDPOINT).map(([id]) => id);
      const claimed = await this.repo.claim(free, busy, this.config.events.webhookTimeoutMs + LEASE_GRACE_MS, {
        taken: this.perOrg,
        max: MAX_IN_FLIGHT_PER_ORG,
      });
      if (claimed.length === 0) return this.wakeWhenDue();
      for (const delivery of claimed) this.start(delivery);
    }
  }

  /** A retry due before the next poll is made on time, not up to a poll interval late. */
  private async wakeWhenDue(): Promise<void> {
    const due = await this.repo.nextDue();
    if (!due || this.stopped) return;
    const wait = due.getTime() - Date.now();
    // Due already but not claimable: its endpoint is busy here (an attempt ending kicks again) or
    // another node holds it. Far off: the poll comes first.
    if (wait <= 0 || wait >= this.config.events.pollMs) return;
    clearTimeout(this.dueTimer);
    this.dueTimer = setTimeout(() => this.kick(), wait);
    this.dueTimer.unref();
  }

  private start(d: ClaimedDelivery): void {
    count(this.perEndpoint, d.endpointId, +1);
    count(this.perOrg, d.orgId, +1);
    const key = `${d.id}#${d.attempt}`;
    const done = this.attempt(d)
      .catch((err) => this.logger.error(`webhook attempt ${key} could not be recorded: ${(err as Error).message}`))
      .finally(() => {
        this.inFlight.delete(key);
        count(this.perEndpoint, d.endpointId, -1);
        count(this.perOrg, d.orgId, -1);
        this.kick();
      });
    this.inFlight.set(key, done);
  }

  private async attempt(d: ClaimedDelivery): Promise<void> {
    if (d.endpointDeleted) {
      // Nobody is listening any more, as for the deliveries the deletion failed itself.
      await this.repo.finish(d.id, d.attempt, { kind: 'failed', status: null, error: 'endpoint deleted' });
      this.metrics.webhookDelivery('dead', 0);
      return;
    }
    let status: number | null = null;
    let error: string | null = null;
    let refused = false;
    const started = performance.now();
    try {
      const body = JSON.stringify(d.event);
      const sentAt = new Date();
      // Standard Webhooks: the id stays the same on every attempt (receivers deduplicate on it),
      // the timestamp is the attempt's (receivers refuse old ones), the signature covers both.
      // During a rotation the replaced secret signs too: Standard Webhooks' space-separated list,
      // the new one first; a receiver's verifier accepts a match with the secret it holds.
      const signature = [d.secretSealed, d.previousSecretSealed]
        .filter((sealed) => sealed !== null)
        .map((sealed) => new Webhook(this.secrets.open(sealed)).sign(d.event.id, sentAt, body))
        .join(' ');
      const response = await this.egress.fetch(d.url.sealed ? this.secrets.open(d.url.sealed) : d.url.shown, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'capability-platform-webhooks/1',
          'webhook-id': d.event.id,
          'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
          'webhook-signature': signature,
        },
        body,
        redirect: 'manual',
        timeoutMs: this.config.events.webhookTimeoutMs,
        org: d.orgId,
        signal: this.stopping.signal,
      });
      status = response.status;
      // Only the status matters; the body is not read (a receiver could send gigabytes).
      await response.body?.cancel().catch(() => undefined);
      if (status < 200 || status > 299) error = `HTTP ${status}`;
    } catch (err) {
      error = describe(err);
      refused = err instanceof EgressRefusedError;
      if (err instanceof SecretOpenError) {
        // The platform's fault, not the receiver's: nothing was sent. Retried (another node, or this
        // one once given the key, may open it); the operator reads why here, the admin in the delivery.
        error = "the platform cannot open this webhook's stored secret or URL (sealed under a secrets key this server does not hold); nothing was sent";
        this.logger.error(`webhook ${d.endpointId} (organization ${d.orgId}): its stored secret or URL cannot be opened: ${err.message}`);
      }
    }
    const outcome: AttemptOutcome = error === null && status !== null ? { kind: 'succeeded', status } : this.retryOrFail(d, status, error ?? 'failed');
    await this.repo.finish(d.id, d.attempt, outcome);
    const label = refused ? 'refused' : outcome.kind === 'succeeded' ? 'delivered' : outcome.kind === 'retry' ? 'retrying' : 'dead';
    this.metrics.webhookDelivery(label, (performance.now() - started) / 1000);
  }

  private retryOrFail(d: ClaimedDelivery, status: number | null, error: string): AttemptOutcome {
    const at = nextAttemptAt(
      { baseMs: this.config.events.webhookRetryBaseMs, windowMs: this.config.events.webhookRetryWindowMs },
      d.attempt,
      d.createdAt,
      new Date(),
    );
    return at ? { kind: 'retry', status, error, at } : { kind: 'failed', status, error };
  }
}

/** What the delivery log says about a failure: the reason, never a header or a body. */
function describe(err: unknown): string {
  const e = err as { code?: unknown; name?: unknown; message?: unknown; cause?: { code?: unknown; message?: unknown } };
  const code = typeof e?.code === 'string' ? e.code : typeof e?.cause?.code === 'string' ? e.cause.code : undefined;
  const message = typeof e?.message === 'string' ? e.message : String(err);
  const text = code && !message.includes(code) ? `${code}: ${message}` : message;
  return text.length > ERROR_MAX_CHARS ? `${text.slice(0, ERROR_MAX_CHARS)}…` : text;
}

/** Adds `by` to the count of `key`; a count that reaches 0 is removed (the maps hold only what is in flight). */
function count(counts: Map<string, number>, key: string, by: number): void {
  const n = (counts.get(key) ?? 0) + by;
  if (n <= 0) counts.delete(key);
  else counts.set(key, n);
}
