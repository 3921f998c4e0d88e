import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/client';

/**
 * What the SDK's client is handed of a server's messages it checks with its own schemas: only the
 * fields it uses. Its schemas copy an object key by key (about 9 µs a key): an `initialize` answer
 * whose `capabilities.experimental` held 400,000 keys (6.6 MB, under what an answer may be) held
 * the node's event loop 3.8 s, at every new session of the connection on every node, and a server
 * that fails each call (the client is then replaced) has one made at every call (attack round 14,
 * O-F4). Tool results and lists have checks of their own (answer-schemas.ts) and pass as sent.
 */

/** The capabilities the client reads, each as its flags. */
const CAPABILITIES = ['tools', 'prompts', 'resources', 'logging', 'completions'] as const;
const FLAGS = ['listChanged', 'subscribe'] as const;
/** Longer names and versions are cut: they are shown nowhere, and a version is a few characters. */
const MAX_NAME = 256;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function own(record: Record<string, unknown>, key: string): unknown {
  return Object.prototype.hasOwnProperty.call(record, key) ? record[key] : undefined;
}

function cut(value: unknown): string | undefined {
  return typeof value === 'string' ? value.slice(0, MAX_NAME) : undefined;
}

/** An `initialize` result as the client uses it: the version, the capabilities' flags, the server's name and version (instructions are not used). */
export function initializeResultShape(result: unknown): unknown {
  if (!isRecord(result)) return result;
  const given = own(result, 'capabilities');
  const capabilities: Record<string, Record<string, boolean>> = {};
  if (isRecord(given)) {
    for (const name of CAPABILITIES) {
      const capability = own(given, name);
      if (!isRecord(capability)) continue;
      const flags: Record<string, boolean> = {};
      for (const flag of FLAGS) if (typeof own(capability, flag) === 'boolean') flags[flag] = own(capability, flag) as boolean;
      capabilities[name] = flags;
    }
  }
  const info = own(result, 'serverInfo');
  return {
    protocolVersion:
      typeof own(result, 'protocolVersion') === 'string' ? (own(result, 'protocolVersion') as string).slice(0, 64) : own(result, 'protocolVersion'),
    capabilities,
    serverInfo: isRecord(info) ? { name: cut(own(info, 'name')), version: cut(own(info, 'version')) } : info,
  };
}

/**
 * A server's notification or request as the client handles it: `notifications/cancelled`,
 * `notifications/progress` and `notifications/message` with their fields (strings cut), anything else without params (the
 * client answers `ping`, refuses the requests it declared no capability for, and only notes
 * `list_changed`).
 */
export function fromServerShape(message: JSONRPCMessage & { method: string; params?: unknown; id?: RequestId }): JSONRPCMessage {
  const base = { jsonrpc: '2.0' as const, method: message.method, ...('id' in message && message.id !== undefined ? { id: message.id } : {}) };
  const params = message.params;
  if (!isRecord(params)) return base as JSONRPCMessage;
  if (message.method === 'notifications/cancelled') {
    return { ...base, params: { requestId: own(params, 'requestId'), reason: cut(own(params, 'reason')) } } as JSONRPCMessage;
  }
  if (message.method === 'notifications/progress') {
    const { progressToken, progress, total } = { progressToken: own(params, 'progressToken'), progress: own(params, 'progress'), total: own(params, 'total') };
    return { ...base, params: { progressToken, progress, total, message: cut(own(params, 'message')) } } as JSONRPCMessage;
  }
  if (message.method === 'notifications/message') {
    // `data` is any value, which the SDK's schema passes unwalked.
    return { ...base, params: { level: own(params, 'level'), logger: cut(own(params, 'logger')), data: own(params, 'data') } } as JSONRPCMessage;
  }
  return base as JSONRPCMessage;
}
