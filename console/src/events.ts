import { useEffect, useRef, useState } from 'react';

export interface AuditEventMessage {
  id: string;
  type: string;
  data: string;
}

export type LiveMode = 'connecting' | 'live' | 'polling';

const POLL_MS = 3000;
const RETRY_MS = 5000;
/** The least time between two reads a page makes for live events: one for the first, one for the rest of a burst. */
const LIVE_READ_MS = 1000;

/**
 * `fn` at once, then at most once per `ms` while calls keep coming, the last call always followed
 * by one. A page read everything again per event: an agent key asking for approvals (or a run
 * stepping through tool calls) made each open page read its lists, or the whole run, per event.
 */
function throttled(fn: () => void, ms: number): { call(): void; cancel(): void } {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let pending = false;
  const fire = () => {
    timer = undefined;
    if (!pending) return;
    pending = false;
    fn();
    timer = setTimeout(fire, ms);
  };
  return {
    call() {
      pending = true;
      if (!timer) fire();
    },
    cancel() {
      if (timer) clearTimeout(timer);
      timer = undefined;
      pending = false;
    },
  };
}

/**
 * Reads `GET /api/v1/events` (Server-Sent Events) with fetch, because EventSource cannot send an
 * Authorization header and the key must not go into the URL. Resumes with Last-Event-ID after a
 * dropped connection. Answers false when the server has no stream for this key (an older server
 * without the endpoint, or a role it does not serve), so the caller polls instead.
 */
export async function readEventStream(
  url: string,
  token: string,
  lastId: { current?: string },
  signal: AbortSignal,
  onEvent: (e: AuditEventMessage) => void,
  onOpen: () => void,
): Promise<boolean> {
  const headers: Record<string, string> = { Authorization: `Bearer ${token}`, Accept: 'text/event-stream' };
  if (lastId.current) headers['Last-Event-ID'] = lastId.current;
  const response = await fetch(url, { headers, signal, cache: 'no-store' });
  if (response.status === 404 || response.status === 403 || response.status === 405) return false;
  if (!response.ok || !response.body || !(response.headers.get('content-type') ?? '').includes('text/event-stream')) {
    throw new Error(`event stream answered ${response.status}`);
  }
  onOpen();
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let event: Partial<AuditEventMessage> & { data?: string } = {};
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return true;
    buffer += value;
    let newline: number;
    while ((newline = buffer.search(/\r\n|\r|\n/)) >= 0) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + (buffer.startsWith('\r\n', newline) ? 2 : 1));
      if (line === '') {
        if (event.data !== undefined) {
          if (event.id) lastId.current = event.id;
          onEvent({ id: event.id ?? '', type: event.type ?? 'message', data: event.data });
        }
        event = {};
      } else if (!line.startsWith(':')) {
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const text = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'data') event.data = event.data === undefined ? text : `${event.data}\n${text}`;
        else if (field === 'id') event.id = text;
        else if (field === 'event') event.type = text;
      }
    }
  }
}

/**
 * Calls `onChange` whenever something of the given audit types happens in the organization: from
 * the live event stream when the server offers it to this key, else by calling it every few
 * seconds while the page is visible.
 */
export function useLiveUpdates(token: string, types: string[], onChange: () => void): LiveMode {
  const [mode, setMode] = useState<LiveMode>('connecting');
  const callback = useRef(onChange);
  callback.current = onChange;
  const key = types.join(',');
  useEffect(() => {
    const abort = new AbortController();
    const lastId: { current?: string } = {};
    const changed = throttled(() => callback.current(), LIVE_READ_MS);
    let timer: ReturnType<typeof setInterval> | undefined;
    const poll = () => {
      setMode('polling');
      if (timer) return;
      timer = setInterval(() => {
        if (document.visibilityState === 'visible') callback.current();
      }, POLL_MS);
    };
    const stopPolling = () => {
      if (timer) clearInterval(timer);
      timer = undefined;
    };
    void (async () => {
      while (!abort.signal.aborted) {
        try {
          const offered = await readEventStream(
            `/api/v1/events?types=${encodeURIComponent(key)}`,
            token,
            lastId,
            abort.signal,
            () => changed.call(),
            () => {
              stopPolling();
              setMode('live');
              // Whatever happened while the stream was down is fetched once, not replayed one by one.
              changed.call();
            },
          );
          if (!offered) return poll();
        } catch {
          if (abort.signal.aborted) return;
        }
        poll();
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
      }
    })();
    return () => {
      abort.abort();
      stopPolling();
      changed.cancel();
    };
  }, [token, key]);
  return mode;
}
