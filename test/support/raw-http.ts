import { connect, Socket } from 'node:net';

/**
 * HTTP written by hand on sockets of its own, for the suites that hold connections the way an
 * attacker does (half heads, stalled bodies, idle keep-alives): supertest cannot stop mid-request.
 */

/** What came back: the status (0 when nothing did), the head, and the body when it is JSON. */
export interface RawAnswer {
  status: number;
  head: string;
  body: Record<string, unknown>;
}

export function parseAnswer(text: string): RawAnswer {
  const end = text.indexOf('\r\n\r\n');
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(text.slice(end + 4)) as Record<string, unknown>;
  } catch {
    // No body, or not JSON.
  }
  return { status: Number(/^HTTP\/1\.1 (\d{3}) /.exec(text)?.[1] ?? 0), head: end < 0 ? text : text.slice(0, end), body };
}

export interface RawClient {
  socket: Socket;
  /** Everything received so far. */
  received: () => string;
  /** What was received, once the connection closed (whichever side closed it). */
  answer: Promise<RawAnswer>;
}

/**
 * Writes `text` on a connection of its own to 127.0.0.1:`port` and leaves it open. The socket is
 * pushed to `sockets`, for the suite to destroy after it.
 */
export function rawClient(port: number, text: string, sockets: Socket[]): RawClient {
  const socket = connect(port, '127.0.0.1');
  sockets.push(socket);
  let received = '';
  socket.setEncoding('latin1');
  socket.on('data', (c: string) => (received += c));
  socket.on('error', () => undefined);
  const answer = new Promise<RawAnswer>((resolve) => socket.once('close', () => resolve(parseAnswer(received))));
  socket.write(text);
  return { socket, received: () => received, answer };
}
