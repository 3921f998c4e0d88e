import { useCallback, useEffect, useRef, useState, type ReactNode } from 'react';
import { messageOf, type FieldError } from '../api/client';

/** An error, announced as it appears. */
export function Alert({ children }: { children: ReactNode }) {
  if (!children) return null;
  return (
    <div role="alert" className="alert">
      {children}
    </div>
  );
}

/** A success or progress message, announced politely. Always rendered, so the live region exists before it speaks. */
export function Status({ children }: { children?: ReactNode }) {
  return (
    <p role="status" className="status">
      {children}
    </p>
  );
}

/** The id of the control that edits the value at an error `path` (see fieldId users). */
export function fieldId(path: string): string {
  return 'f-' + path.replace(/[^A-Za-z0-9_-]/g, '_');
}

export function errorId(path: string): string {
  return fieldId(path) + '-error';
}

/** Errors by the exact `path` they name. */
export type ErrorMap = Map<string, FieldError[]>;

export function errorMap(errors: FieldError[]): ErrorMap {
  const map: ErrorMap = new Map();
  for (const e of errors) map.set(e.path, [...(map.get(e.path) ?? []), e]);
  return map;
}

/** A field's invalid state and description wiring: `aria-invalid` and the id of its message. */
export function fieldErrorProps(errors: ErrorMap, path: string): { 'aria-invalid'?: true; 'aria-describedby'?: string } {
  return errors.has(path) ? { 'aria-invalid': true, 'aria-describedby': errorId(path) } : {};
}

/** The message(s) next to a field, tied to it by id. */
export function FieldErrors({ errors, path }: { errors: ErrorMap; path: string }) {
  const list = errors.get(path);
  if (!list) return null;
  return (
    <p id={errorId(path)} className="field-error">
      {list.map((e) => e.message).join(' ')}
    </p>
  );
}

/**
 * Every error of a refusal, announced, each linking to the field its path names when the page
 * draws one (the summary is where an error without a field still shows).
 */
export function ErrorSummary({ title, errors }: { title: string; errors: FieldError[] }) {
  if (errors.length === 0) return null;
  return (
    <div role="alert" className="alert error-summary">
      <h2>{title}</h2>
      <ul>
        {errors.map((e, i) => (
          <li key={i}>
            <a
              href={`#${fieldId(e.path)}`}
              onClick={(ev) => {
                const target = document.getElementById(fieldId(e.path));
                ev.preventDefault();
                if (target) {
                  target.scrollIntoView({ block: 'center' });
                  target.focus();
                }
              }}
            >
              <code>{e.path}</code>
            </a>
            : {e.message}
          </li>
        ))}
      </ul>
    </div>
  );
}

/**
 * Loads data for a page; `reload` refetches. Errors are kept for the page to show. A reload asked
 * while a read is under way is made once that read ends, however many were asked meanwhile: live
 * events (any agent key makes them) started a read each, a page of up to 4 MiB, all at once.
 */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): { data?: T; error?: string; loading: boolean; reload(): void } {
  const [state, setState] = useState<{ data?: T; error?: string; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  const reading = useRef(false);
  const again = useRef(false);
  // The caller names what the load depends on (the client, ids); the closure itself is new on every render.
  const run = useCallback(load, deps);
  useEffect(() => {
    let live = true;
    reading.current = true;
    again.current = false;
    setState((s) => ({ ...s, loading: true }));
    void run()
      .then(
        (data) => live && setState({ data, loading: false }),
        (err: unknown) => live && setState({ error: messageOf(err), loading: false }),
      )
      .then(() => {
        if (!live) return;
        reading.current = false;
        if (again.current) setTick((n) => n + 1);
      });
    return () => {
      live = false;
    };
  }, [run, tick]);
  const reload = useCallback(() => {
    if (reading.current) again.current = true;
    else setTick((n) => n + 1);
  }, []);
  return { ...state, reload };
}

export interface Paged<T> {
  data?: { items: T[]; nextCursor: string | null };
  error?: string;
  loading: boolean;
  reload(): void;
  /** Reads one more page (kept across reloads). */
  more(): void;
}

/**
 * A list read page after page, its first page at once and each next one on `more()`. A list that
 * stopped at its first page hid the rest from the person reading it: pending approvals, a key
 * among revoked ones, a webhook, a connection (a page also ends at about 4 MiB of items).
 */
export function usePages<T>(read: (cursor?: string) => Promise<{ items: T[]; nextCursor: string | null }>, deps: unknown[]): Paged<T> {
  const [pages, setPages] = useState(1);
  const load = useLoad(async () => {
    const items: T[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < pages; i++) {
      const page = await read(cursor);
      items.push(...page.items);
      if (!page.nextCursor) return { items, nextCursor: null };
      cursor = page.nextCursor;
    }
    return { items, nextCursor: cursor ?? null };
  }, [...deps, pages]);
  return { ...load, more: () => setPages((n) => n + 1) };
}

/** The button that reads a list's next page, shown while there is one. */
export function ShowMore({ list, children }: { list: Paged<unknown>; children: string }) {
  if (!list.data?.nextCursor) return null;
  return (
    <div className="actions">
      <button type="button" disabled={list.loading} onClick={() => list.more()}>
        {children}
      </button>
    </div>
  );
}

/**
 * Characters that change how text around them shows, or show as nothing: format characters
 * (bidirectional overrides and isolates such as U+202E, zero-width spaces and joiners, the soft
 * hyphen, U+FEFF), the line and paragraph separators, and every other default-ignorable code
 * point, which fonts draw as nothing whatever their category: variation selectors (U+FE00 to
 * U+FE0F, U+E0100 to U+E01EF; one after each visible character can carry a byte, so a whole
 * sentence hides behind a word), the combining grapheme joiner and the Hangul fillers. Also every
 * space but U+0020, and U+2800 BRAILLE PATTERN BLANK: drawn blank and, unlike U+0020 at the end of
 * a line, wrapped into lines of their own, so 4,000 of them pushed the rest of an argument below
 * what its box shows (`Refund 100 to me`, then blank lines, then what was hidden).
 */
const UNSEEN = /(?!\x20)[\p{Zs}\p{Cf}\p{Default_Ignorable_Code_Point}\u2028\u2029\u2800]/gu;

/**
 * `value` as indented JSON with every UNSEEN character written as its `\uXXXX` escape, which JSON
 * reads back as the same character. What an approver reads is what the tool gets: arguments a
 * model wrote could otherwise show `refund 100` where they hold `refund 001` reversed by U+202E, or
 * hide words between zero-width characters.
 */
export function visibleJson(value: unknown): string {
  return (JSON.stringify(value, null, 2) ?? '').replace(UNSEEN, escapeUnseen);
}

// An astral one (a tag character, U+E0001 to U+E007F, or a variation selector past U+E0100: text
// hidden from people, read by models) as its two halves.
function escapeUnseen(c: string): string {
  return Array.from({ length: c.length }, (_, i) => `\\u${c.charCodeAt(i).toString(16).padStart(4, '0')}`).join('');
}

/**
 * A name shown where a person decides (the tool and agent of an approval) with every UNSEEN
 * character as its `\uXXXX` escape: an MCP tool is named by its vendor's server (any character
 * but U+0000) and an agent by any builder, and a right-to-left override in either reversed the
 * text after it on the card, a zero-width one hid what told two names apart.
 */
export function visibleText(text: string): string {
  return text.replace(UNSEEN, escapeUnseen);
}

/**
 * How many UNSEEN characters a text being edited holds, and the first few kinds as escapes: a text
 * box shows them as they are (escaping them would change the text), so the editor says they are there.
 */
export function unseenIn(text: string): { count: number; kinds: string[] } {
  const found = text.match(UNSEEN) ?? [];
  return { count: found.length, kinds: [...new Set(found.map(escapeUnseen))].slice(0, 5) };
}

export function JsonView({ value, label }: { value: unknown; label: string }) {
  return (
    <pre className="json" role="region" aria-label={label} tabIndex={0}>
      {visibleJson(value)}
    </pre>
  );
}

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}
