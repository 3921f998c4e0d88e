import { Context, ROOT_CONTEXT } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';

/** A value taken out by `deleteValue`: the key reads as unset from this context on. */
const DELETED: unique symbol = Symbol('deleted');

/** Past this many links a context is rebuilt with one link per key it holds. */
const MAX_DEPTH = 32;

/**
 * The trace context as a chain: each `setValue` adds one small link in front of the context it was
 * called on, instead of copying every entry into a new Map as the API's own context does.
 *
 * Why: a governed call derives a context five or six times (the request's span, its logger, the
 * spans of the call, the guards and the tool), and each of the API's contexts is a `Map` built from
 * its parent's entries; they are made on every request and live as long as it does. A link is one
 * small object. Reading a key walks the links back to where it was set (a few: the chain is as deep
 * as the nesting, and the span, the key read most, is usually the first link).
 *
 * What it deliberately does not do: change what a context means. It is the API's `Context`: values
 * are immutable, a derived context never changes the one it came from, `deleteValue` unsets a key;
 * tested against the API's own on generated sequences (chained-context.spec.ts). A context made
 * elsewhere from `ROOT_CONTEXT` stays the API's kind, and the two mix freely.
 */
export class ChainedContext implements Context {
  private constructor(
    private readonly parent: ChainedContext | undefined,
    private readonly key: symbol | undefined,
    private readonly value: unknown,
    private readonly depth: number,
  ) {}

  static readonly ROOT = new ChainedContext(undefined, undefined, undefined, 0);

  getValue(key: symbol): unknown {
    return ChainedContext.find(this, key);
  }

  private static find(from: ChainedContext, key: symbol): unknown {
    for (let link: ChainedContext | undefined = from; link !== undefined; link = link.parent) {
      if (link.key === key) return link.value === DELETED ? undefined : link.value;
    }
    return undefined;
  }

  setValue(key: symbol, value: unknown): Context {
    return this.derive(key, value);
  }

  deleteValue(key: symbol): Context {
    return this.derive(key, DELETED);
  }

  private derive(key: symbol, value: unknown): ChainedContext {
    if (this.depth < MAX_DEPTH) return new ChainedContext(this, key, value, this.depth + 1);
    return ChainedContext.flattened(this, key, value);
  }

  /**
   * Code that derives from a derived context in a loop would otherwise grow the chain without end:
   * past MAX_DEPTH the chain is rebuilt with one link per key (its latest value), in the order the
   * keys were first set, and the new link in front.
   */
  private static flattened(from: ChainedContext, key: symbol, value: unknown): ChainedContext {
    const latest = new Map<symbol, unknown>();
    const keys: symbol[] = [];
    for (let link: ChainedContext | undefined = from; link?.key !== undefined; link = link.parent) {
      if (!latest.has(link.key)) latest.set(link.key, link.value);
      keys.push(link.key);
    }
    latest.delete(key);
    let flat = ChainedContext.ROOT;
    for (const k of [...new Set(keys.reverse())]) {
      if (latest.has(k) && latest.get(k) !== DELETED) flat = new ChainedContext(flat, k, latest.get(k), flat.depth + 1);
    }
    return new ChainedContext(flat, key, value, flat.depth + 1);
  }
}

/**
 * The SDK's context manager (AsyncLocalStorage), whose empty context is a `ChainedContext`: every
 * context the process derives from the active one is then a chain.
 */
export class ChainedContextManager extends AsyncLocalStorageContextManager {
  override active(): Context {
    const active = super.active();
    return active === ROOT_CONTEXT ? ChainedContext.ROOT : active;
  }
}
