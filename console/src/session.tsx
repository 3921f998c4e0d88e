import { createContext, useContext } from 'react';
import type { Api, Schemas } from './api/client';

export type Me = Schemas['MeView'];

export interface Session {
  api: Api;
  /** The raw key, for the one call openapi-fetch cannot make: the event stream (see events.ts). */
  token: string;
  me: Me;
  signOut(reason?: string): void;
}

export const SessionContext = createContext<Session | null>(null);

export function useSession(): Session {
  const session = useContext(SessionContext);
  if (!session) throw new Error('useSession outside a signed-in console');
  return session;
}

export type Ability = 'read' | 'build' | 'approve' | 'admin';

/**
 * What a key's roles allow, as API.md's role table says. The console hides what is not allowed;
 * the server still decides (a hidden button is a courtesy, never the check).
 */
export function can(me: Me, ability: Ability): boolean {
  const roles = new Set(me.roles ?? []);
  if (roles.has('admin')) return true;
  switch (ability) {
    case 'read':
      return roles.has('viewer') || roles.has('builder') || roles.has('approver');
    case 'build':
      return roles.has('builder');
    case 'approve':
      return roles.has('approver');
    case 'admin':
      return false;
  }
}
