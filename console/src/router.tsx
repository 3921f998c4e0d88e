import { useEffect, useRef, useSyncExternalStore, type AnchorHTMLAttributes, type ReactNode } from 'react';

/** Where the server mounts the console (src/console/serve-console.ts); vite.config.ts agrees. */
export const BASE = '/console';
const CHANGE = 'console:navigate';

function subscribe(onChange: () => void): () => void {
  window.addEventListener('popstate', onChange);
  window.addEventListener(CHANGE, onChange);
  return () => {
    window.removeEventListener('popstate', onChange);
    window.removeEventListener(CHANGE, onChange);
  };
}

function currentPath(): string {
  const path = window.location.pathname.startsWith(BASE) ? window.location.pathname.slice(BASE.length) : window.location.pathname;
  return path === '' ? '/' : path;
}

/** The path inside the console, e.g. `/agents/<id>`. Ids only: nothing secret is ever put in a URL. */
export function usePath(): string {
  return useSyncExternalStore(subscribe, currentPath);
}

export function navigate(to: string, options: { replace?: boolean } = {}): void {
  if (options.replace) window.history.replaceState(null, '', BASE + to);
  else window.history.pushState(null, '', BASE + to);
  window.dispatchEvent(new Event(CHANGE));
}

/** Sends the browser elsewhere without leaving an entry in its history (for `/console` itself). */
export function Redirect({ to }: { to: string }) {
  useEffect(() => navigate(to, { replace: true }), [to]);
  return null;
}

/** Matches `/agents/:id` style patterns; answers the named segments or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const want = pattern.split('/').filter(Boolean);
  const got = path.split('/').filter(Boolean);
  if (want.length !== got.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    if (want[i].startsWith(':')) params[want[i].slice(1)] = decodeURIComponent(got[i]);
    else if (want[i] !== got[i]) return null;
  }
  return params;
}

export function Link({ to, children, ...rest }: { to: string; children: ReactNode } & AnchorHTMLAttributes<HTMLAnchorElement>) {
  return (
    <a
      {...rest}
      href={BASE + to}
      onClick={(e) => {
        if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
        e.preventDefault();
        navigate(to);
      }}
    >
      {children}
    </a>
  );
}

/**
 * A page's title: sets the document title and takes the focus when the page changes, so a screen
 * reader announces where a link led (a single-page app otherwise changes silently).
 */
export function PageTitle({ children }: { children: string }) {
  const ref = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${children} · Builder console`;
    ref.current?.focus();
  }, [children]);
  return (
    <h1 ref={ref} tabIndex={-1}>
      {children}
    </h1>
  );
}
