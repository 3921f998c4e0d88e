import type { FastifyReply } from 'fastify';
import { MAX_WAIT_SECONDS } from './runs.service';

// `POST /agents/{id}/runs` with `Prefer: wait=N`: what the preference asks, how many an organization
// may have held at once, and the socket that must outlast the wait.

/** Runs of one organization a node answers after a wait at once (RUN_WAITS_PER_ORG unset). */
export const DEFAULT_RUN_WAITS_PER_ORG = 64;

/**
 * A request the server holds silent on purpose must outlast it: the connection's idle timeout
 * (HTTP_IDLE_TIMEOUT_MS, 60 s by default) equalled the longest wait, so `wait=60` got an empty
 * reply and never learned the run's id. The timeout is lengthened for this answer and given back.
 */
export function holdOpenFor(reply: FastifyReply, ms: number): void {
  const socket = reply.raw.socket;
  const idle = socket?.timeout;
  if (!socket || !idle || idle > ms + HOLD_MARGIN_MS) return;
  socket.setTimeout(ms + HOLD_MARGIN_MS);
  reply.raw.once('close', () => {
    if (!socket.destroyed) socket.setTimeout(idle);
  });
}
const HOLD_MARGIN_MS = 15_000;

/** RFC 7240: `wait=N` among the preferences; a preference we cannot honour in full is honoured in part (at most 60 s). */
export function waitOf(prefer: string | undefined): number | undefined {
  if (!prefer) return undefined;
  const m = /(?:^|[,;\s])wait\s*=\s*"?(\d{1,6})"?(?=$|[,;\s])/i.exec(prefer);
  if (!m) return undefined;
  return Math.min(Number(m[1]), MAX_WAIT_SECONDS);
}
