// Longer than 300 lines because every metric, its labels and their bounds stay in this one file
// (the other modules record through its methods), so an operator reads the whole set in one place.
import { Injectable, OnApplicationShutdown } from '@nestjs/common';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/**
 * What a tool call came to, as a metric label. `denied` carries the guard's error code in
 * `reason`; every other outcome has `reason=""`.
 */
export type ToolCallOutcomeLabel = 'succeeded' | 'failed' | 'denied' | 'pending_approval';

/** The guards' refusal codes; anything else a denial carries is reported as `other`. */
const DENIAL_REASONS = new Set([
  'unknown_tool',
  'tool_definition_changed',
  'scope_not_granted',
  'budget_exceeded',
  'invalid_arguments',
  'approval_arguments_changed',
]);

export type ApprovalDecisionLabel = 'approved' | 'rejected' | 'expired';
export type RateLimitName = 'per_key' | 'per_org' | 'auth_failures';
/**
 * One delivery attempt: `delivered` (2xx), `retrying` (it failed and will be tried again), `dead`
 * (it failed and the retry window is over), `refused` (the egress policy refused the address).
 */
export type WebhookDeliveryOutcome = 'delivered' | 'retrying' | 'dead' | 'refused';

const HTTP_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** Seconds. From a key lookup on loopback (~1 ms) to a tool that runs into its timeout. */
const LATENCY_BUCKETS = [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** Seconds. A person decides an approval in minutes to days. */
const DECISION_BUCKETS = [1, 10, 60, 300, 900, 3600, 4 * 3600, 86400, 7 * 86400, 30 * 86400];
const QUERY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5];

/** What a tool call's metrics are labelled with: a version's tool (an MCP tool has a `source`). */
export interface MetricTool {
  capabilityId: string;
  toolId: string;
  source?: { server: string };
}

/**
 * The process's Prometheus metrics, one registry per application instance (tests run several apps
 * in one process; each scrapes only its own).
 *
 * Labels are bounded by construction: route templates (never the URL), capability and tool ids
 * that the code declares (never the offered name, which an agent's spec may rename), error codes
 * from a fixed list, statuses from fixed unions. No organization, agent, key or call id is a label;
 * those belong to traces and logs.
 *
 * Other modules record through the methods below rather than touching prom-client, so that names,
 * labels and their bounds stay in this one file.
 */
@Injectable()
export class Metrics implements OnApplicationShutdown {
  readonly registry = new Registry();
  /** Stops the default metrics' event-loop monitor and GC observer (see collectStoppableDefaultMetrics). */
  private readonly stopDefaultMetrics: () => void;

  private readonly httpRequests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by method, route template and status code.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });
  private readonly httpDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from receiving a request to the end of its answer, by method, route template and status class.',
    labelNames: ['method', 'route', 'status_class'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });

  private readonly toolCalls = new Counter({
    name: 'tool_calls_total',
    help: "Tool calls by capability, tool and outcome (succeeded, failed, denied with the guard's code in reason, pending_approval).",
    labelNames: ['capability', 'tool', 'outcome', 'reason'] as const,
    registers: [this.registry],
  });
  private readonly toolDuration = new Histogram({
    name: 'tool_call_duration_seconds',
    help: 'Time a tool implementation ran (guards and persistence excluded), by capability, tool and outcome.',
    labelNames: ['capability', 'tool', 'outcome'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  private readonly budgetRefusals = new Counter({
    name: 'budget_refusals_total',
    help: 'Tool calls refused because a run reached its tool-call budget, by capability and tool.',
    labelNames: ['capability', 'tool'] as const,
    registers: [this.registry],
  });
  private readonly approvalDecision = new Histogram({
    name: 'approval_decision_seconds',
    help: 'Time from an approval being requested to its decision, by decision (approved, rejected, expired).',
    labelNames: ['decision'] as const,
    buckets: DECISION_BUCKETS,
    registers: [this.registry],
  });
  /** Set at scrape time from the database (see TelemetryModule): the same figure on every node. */
  private readonly approvalsPending = new Gauge({
    name: 'approvals_pending',
    help: 'Approvals waiting for a decision, all organizations together (read from the database at scrape time, at most every 2 s).',
    registers: [this.registry],
  });
  private readonly approvalsOldestPendingAge = new Gauge({
    name: 'approvals_oldest_pending_age_seconds',
    help: 'Age of the oldest approval still waiting for a decision; 0 when none waits.',
    registers: [this.registry],
  });

  private readonly rateLimitRefusals = new Counter({
    name: 'rate_limit_refusals_total',
    help: 'Requests answered 429 by a rate limit, by limit (per_key, per_org, auth_failures).',
    labelNames: ['limit'] as const,
    registers: [this.registry],
  });
  private readonly rateLimitFallbacks = new Counter({
    name: 'rate_limit_store_fallbacks_total',
    help: 'Rate-limit hits counted in process because the shared store (Redis) did not answer.',
    registers: [this.registry],
  });
  private readonly rateLimitStoreUp = new Gauge({
    name: 'rate_limit_store_up',
    help: '1 while the shared rate-limit store (Redis) answers, 0 while hits are counted in process instead; absent without a shared store.',
    registers: [],
  });

  private readonly heldRefusals = new Counter({
    name: 'held_request_refusals_total',
    help: 'Requests not held open (a stream refused 429, a wait answered at once, a tool call refused 429) for want of room, by limit: per_org (HTTP_HELD_REQUESTS_PER_ORG) or node (HTTP_HELD_REQUESTS_MAX).',
    labelNames: ['limit'] as const,
    registers: [this.registry],
  });

  private readonly runs = new Counter({
    name: 'runs_total',
    help: 'Agent runs reaching a status, by status.',
    labelNames: ['status'] as const,
    registers: [this.registry],
  });
  private readonly webhookDeliveries = new Counter({
    name: 'webhook_deliveries_total',
    help: 'Webhook delivery attempts by outcome; `dropped`: events not written as deliveries, their endpoint being at its cap of pending ones.',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  private readonly webhookDuration = new Histogram({
    name: 'webhook_delivery_duration_seconds',
    help: 'Time one webhook delivery attempt took, by outcome.',
    labelNames: ['outcome'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });

  private readonly dbQueryDuration = new Histogram({
    name: 'db_query_duration_seconds',
    help: 'Time from sending a query to its answer, as the ORM measures it (successful queries).',
    buckets: QUERY_BUCKETS,
    registers: [this.registry],
  });
  private readonly dbQueryErrors = new Counter({
    name: 'db_query_errors_total',
    help: 'Queries the database answered with an error (constraint violations included: some are expected, e.g. an idempotency race).',
    registers: [this.registry],
  });

  private readonly beforeScrape: Array<() => Promise<void>> = [];

  /** Label children looked up once per distinct label set: the hot path does a Map lookup, not a label hash. */
  private readonly httpChildren = new Map<string, { count: { inc(): void }; duration: { observe(v: number): void } }>();

  constructor() {
    // Process metrics (CPU, memory, handles, GC) and event-loop lag (nodejs_eventloop_lag_*).
    this.stopDefaultMetrics = collectStoppableDefaultMetrics(this.registry);
  }

  onApplicationShutdown(): void {
    this.stopDefaultMetrics();
  }

  /** One answered HTTP request. `route` is the router's template, or undefined when no route matched. */
  httpRequest(method: string, route: string | undefined, status: number, seconds: number): void {
    const m = HTTP_METHODS.has(method) ? method : 'OTHER';
    const r = route ?? 'unmatched';
    const key = `${m} ${status} ${r}`;
    let child = this.httpChildren.get(key);
    if (!child) {
      child = {
        count: this.httpRequests.labels(m, r, String(status)),
        duration: this.httpDuration.labels(m, r, `${Math.floor(status / 100)}xx`),
      };
      this.httpChildren.set(key, child);
    }
    child.count.inc();
    child.duration.observe(seconds);
  }

  /**
   * A request answered before it was parsed, on the socket (a timeout, headers too large, a
   * malformed request, an unmet Expect): counted, under route `unparsed`, so a slow-client or
   * header-flood attack shows; its duration is not known, so none is observed.
   */
  httpRequestUnparsed(status: number): void {
    this.httpRequests.labels('OTHER', 'unparsed', String(status)).inc();
  }

  /**
   * One tool call reaching an outcome; `tool` undefined when the request named no tool the version
   * offers. Labelled with the declared ids, bounded by the code; an MCP tool's id is not (a
   * connection name a tenant chose, a tool name a vendor's server sent: tenant data, unbounded, on
   * an endpoint that may be open), so its `tool` is the catalog entry it runs on (`everything`).
   * `seconds` is the time the implementation ran, only for `succeeded` and `failed`.
   */
  toolCall(tool: MetricTool | undefined, outcome: ToolCallOutcomeLabel, detail: { reason?: string; seconds?: number } = {}): void {
    const c = tool?.capabilityId ?? 'none';
    const t = tool === undefined ? 'none' : tool.source ? tool.source.server : tool.toolId;
    const reason = outcome === 'denied' ? (detail.reason && DENIAL_REASONS.has(detail.reason) ? detail.reason : 'other') : '';
    this.toolCalls.labels(c, t, outcome, reason).inc();
    if (reason === 'budget_exceeded') this.budgetRefusals.labels(c, t).inc();
    if (detail.seconds !== undefined && (outcome === 'succeeded' || outcome === 'failed')) this.toolDuration.labels(c, t, outcome).observe(detail.seconds);
  }

  /** An approval decided (or expired) `seconds` after it was requested. */
  approvalDecided(decision: ApprovalDecisionLabel, seconds: number): void {
    this.approvalDecision.labels(decision).observe(Math.max(0, seconds));
  }

  rateLimited(limit: RateLimitName): void {
    this.rateLimitRefusals.labels(limit).inc();
  }

  /** A hit counted in process because the shared store failed. */
  rateLimitFallback(): void {
    this.rateLimitFallbacks.inc();
  }

  /** Called once a shared store exists; registers `rate_limit_store_up` and sets it. */
  rateLimitStoreAvailable(up: boolean): void {
    if (!this.registry.getSingleMetric('rate_limit_store_up')) this.registry.registerMetric(this.rateLimitStoreUp);
    this.rateLimitStoreUp.set(up ? 1 : 0);
  }

  /** A request that would have been held open was not (HeldRequests). */
  heldRequestRefused(limit: 'per_org' | 'node'): void {
    this.heldRefusals.labels(limit).inc();
  }

  /** A run reached `status` (`running` when created or resumed, `waiting_for_approval`, `succeeded`, `failed`, `cancelled`), counted once, by the node that wrote it. */
  runStatus(status: string): void {
    this.runs.labels(boundedWord(status)).inc();
  }

  /** One webhook delivery attempt and how long it took. */
  webhookDelivery(outcome: WebhookDeliveryOutcome, seconds?: number): void {
    this.webhookDeliveries.labels(outcome).inc();
    if (seconds !== undefined) this.webhookDuration.labels(outcome).observe(seconds);
  }

  /**
   * Events not written as deliveries because their endpoint was at WEBHOOK_MAX_PENDING_PER_ENDPOINT,
   * as the sweep counts them (within an interval, by the node that counted): `outcome="dropped"`.
   */
  webhookDeliveriesDropped(count: number): void {
    if (count > 0) this.webhookDeliveries.labels('dropped').inc(count);
  }

  /** One query answered: `seconds` when it succeeded, undefined when it failed. */
  dbQuery(seconds: number | undefined): void {
    if (seconds === undefined) this.dbQueryErrors.inc();
    else this.dbQueryDuration.observe(seconds);
  }

  /** Registers a gauge read at scrape time (e.g. database pool use). */
  gauge(name: string, help: string, collect: () => number | undefined): void {
    new Gauge({
      name,
      help,
      registers: [this.registry],
      collect() {
        const v = collect();
        if (v !== undefined) this.set(v);
      },
    });
  }

  /** The approvals waiting now and the age of the oldest (seconds), as read from the database. */
  approvalsWaiting(count: number, oldestAgeSeconds: number): void {
    this.approvalsPending.set(count);
    this.approvalsOldestPendingAge.set(Math.max(0, oldestAgeSeconds));
  }

  /** Runs `fn` before each scrape, e.g. to read a figure from the database once for several gauges. */
  onScrape(fn: () => Promise<void>): void {
    this.beforeScrape.push(fn);
  }

  /** Prometheus text exposition. */
  async scrape(): Promise<string> {
    await Promise.all(this.beforeScrape.map((fn) => fn()));
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

/** Statuses come from code, but a label must never grow without bound even if a caller passes data. */
function boundedWord(value: string): string {
  return /^[a-z_]{1,32}$/.test(value) ? value : 'other';
}

/**
 * prom-client's default metrics, and a function that stops what they leave running.
 *
 * `collectDefaultMetrics` starts an event-loop delay monitor (a native timer sampling every 20 ms)
 * and a PerformanceObserver of garbage collections, and offers no way to stop either
 * (prometheus/client_js#494 and #500, open in 15.x). Each also holds the async context it was made
 * in, and through it the whole application: every app a process made and closed stayed in memory
 * and kept both running. A Jest worker that had run sixty test files held 2 GB of heap, answered
 * every collection sixty times, and took longer than Jest's half second to exit. Both are captured
 * as prom-client makes them (it reads them off `perf_hooks` when called, and nothing else runs
 * meanwhile: the swap is synchronous and undone before returning) and stopped when the app closes.
 */
export function collectStoppableDefaultMetrics(register: Registry): () => void {
  // The module object itself (an import would be a copy of its bindings): prom-client reads it.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const perfHooks = require('node:perf_hooks') as typeof import('node:perf_hooks');
  const stops: Array<() => void> = [];
  const { monitorEventLoopDelay, PerformanceObserver } = perfHooks;
  perfHooks.monitorEventLoopDelay = (options) => {
    const histogram = monitorEventLoopDelay(options);
    stops.push(() => histogram.disable());
    return histogram;
  };
  perfHooks.PerformanceObserver = class StoppablePerformanceObserver extends PerformanceObserver {
    constructor(callback: ConstructorParameters<typeof PerformanceObserver>[0]) {
      super(callback);
      stops.push(() => this.disconnect());
    }
  };
  const stop = () => {
    for (const s of stops.splice(0)) s();
  };
  try {
    collectDefaultMetrics({ register, eventLoopMonitoringPrecision: 20 });
  } catch (err) {
    stop(); // what was started before the failure
    throw err;
  } finally {
    perfHooks.monitorEventLoopDelay = monitorEventLoopDelay;
    perfHooks.PerformanceObserver = PerformanceObserver;
  }
  return stop;
}
