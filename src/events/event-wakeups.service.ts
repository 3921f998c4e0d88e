import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { Client, Notification } from 'pg';
import { DataSource } from 'typeorm';
import { AuditService } from '../audit/audit.service';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { listen, notify } from '../database/notifications';
import { detachedFromCaller } from '../telemetry/trace-context';

/** Which organizations have new events; `all` when that is unknown (a wake-up may have been missed). */
export type Wakeup = ReadonlySet<string> | 'all';
export type WakeupListener = (orgs: Wakeup) => void;

const CHANNEL = 'audit_event';
// NOTIFY payloads are limited to 8000 bytes: past this many organizations, wake everyone.
const MAX_ORGS_PER_NOTIFY = 150;
const RECONNECT_MAX_MS = 30_000;
/** Commits within this much of each other share one NOTIFY. */
const NOTIFY_COALESCE_MS = 10;

/**
 * Tells the readers of the event log (streams, the webhook dispatcher) on every node that there
 * is something new. Only a wake-up: the audit table is the truth, and every reader also looks
 * on its own every `events.pollMs`, so a lost notification costs latency, never an event.
 *
 * On PostgreSQL: one dedicated LISTEN connection per node, and a NOTIFY sent after the commit
 * from the pool (never from inside the writing transaction: a NOTIFY there takes a database-wide
 * lock at commit that serializes every notifying commit). At most one NOTIFY is in flight per
 * node; organizations written meanwhile ride on the next one.
 * On the embedded database there is one node by design, so the in-process wake-up is all.
 */
@Injectable()
export class EventWakeups implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(EventWakeups.name);
  private readonly listeners: WakeupListener[] = [];
  private readonly othersListeners: WakeupListener[] = [];
  private readonly nodeId = randomUUID();
  private readonly pending = new Set<string>();
  private notifying = false;
  private listenClient?: Client;
  private reconnectTimer?: NodeJS.Timeout;
  private reconnectDelay = 1000;
  private stopped = false;
  private unsubscribe?: () => void;

  constructor(
    private readonly audit: AuditService,
    private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async onModuleInit(): Promise<void> {
    this.unsubscribe = this.audit.onCommitted((orgs) => {
      this.emit(orgs);
      if (this.config.databaseUrl) this.notify(orgs);
    });
    if (this.config.databaseUrl) await this.listen();
  }

  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    clearTimeout(this.reconnectTimer);
    const client = this.listenClient;
    this.listenClient = undefined;
    await client?.end().catch(() => undefined);
  }

  on(listener: WakeupListener): () => void {
    return subscribe(this.listeners, listener);
  }

  /**
   * Wake-ups for what other nodes committed only (and `all` when some may have been missed): for
   * a node that must learn what another did, such as a cancel of a run it steps, without a look
   * for every commit of its own.
   */
  onOthers(listener: WakeupListener): () => void {
    return subscribe(this.othersListeners, listener);
  }

  private emit(orgs: Wakeup, listeners = this.listeners): void {
    for (const listener of listeners) {
      try {
        // Called in the committing request's context; what listeners start serves every organization.
        detachedFromCaller(() => listener(orgs));
      } catch (err) {
        this.logger.error(`wake-up listener failed: ${(err as Error).message}`);
      }
    }
  }

  private notify(orgs: ReadonlySet<string>): void {
    for (const org of orgs) this.pending.add(org);
    if (this.notifying) return;
    this.notifying = true;
    void this.flush();
  }

  private async flush(): Promise<void> {
    try {
      while (this.pending.size > 0 && !this.stopped) {
        await new Promise((resolve) => setTimeout(resolve, NOTIFY_COALESCE_MS));
        const orgs = [...this.pending];
        this.pending.clear();
        const payload = `${this.nodeId}:${orgs.length > MAX_ORGS_PER_NOTIFY ? '*' : orgs.join(',')}`;
        await notify(this.dataSource, CHANNEL, payload);
      }
    } catch (err) {
      // The other nodes find these events when they next poll.
      this.pending.clear();
      this.logger.warn(`NOTIFY failed: ${(err as Error).message}`);
    } finally {
      this.notifying = false;
    }
  }

  private async listen(): Promise<void> {
    const client = new Client({ connectionString: this.config.databaseUrl, application_name: 'events-listener' });
    client.on('notification', (n: Notification) => this.received(n.payload ?? ''));
    client.on('error', (err) => {
      this.logger.warn(`LISTEN connection failed: ${err.message}`);
      this.reconnect(client);
    });
    client.on('end', () => this.reconnect(client));
    try {
      await client.connect();
      await listen(client, CHANNEL);
      this.listenClient = client;
      this.reconnectDelay = 1000;
    } catch (err) {
      this.logger.warn(`cannot LISTEN (streams and webhooks fall back to polling): ${(err as Error).message}`);
      this.reconnect(client);
    }
  }

  private reconnect(client: Client): void {
    if (this.stopped || this.reconnectTimer) return;
    if (this.listenClient === client) this.listenClient = undefined;
    client.removeAllListeners('end');
    void client.end().catch(() => undefined);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      // Whatever was notified while disconnected is unknown: every reader looks again.
      void this.listen().then(() => this.emitOthers('all'));
    }, this.reconnectDelay);
    this.reconnectDelay = Math.min(this.reconnectDelay * 2, RECONNECT_MAX_MS);
  }

  private received(payload: string): void {
    const colon = payload.indexOf(':');
    if (colon < 0) return this.emitOthers('all');
    // Our own NOTIFY: this node was woken when it committed.
    if (payload.slice(0, colon) === this.nodeId) return;
    const list = payload.slice(colon + 1);
    this.emitOthers(list === '*' ? 'all' : new Set(list.split(',')));
  }

  private emitOthers(orgs: Wakeup): void {
    this.emit(orgs);
    this.emit(orgs, this.othersListeners);
  }
}

function subscribe(listeners: WakeupListener[], listener: WakeupListener): () => void {
  listeners.push(listener);
  return () => {
    const i = listeners.indexOf(listener);
    if (i >= 0) listeners.splice(i, 1);
  };
}
