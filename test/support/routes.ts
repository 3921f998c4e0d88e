import { RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA, ROUTE_ARGS_METADATA } from '@nestjs/common/constants';
import { MetadataScanner, ModulesContainer, Reflector } from '@nestjs/core';
import { AccessMetadata, PUBLIC_ROUTE } from '../../src/auth/access.decorator';
import type { TestApp } from './test-app';

export interface Route {
  method: string;
  path: string;
  access: string[] | 'public' | undefined;
  /** The class of the @Body() parameter, when the handler reads a body. */
  body?: Function;
}

const BODY_PARAMTYPE = 3; // RouteParamtypes.BODY

/** Every route the application serves, read from Nest's own metadata (not from a list we keep). */
export function walkRoutes(t: TestApp): Route[] {
  const scanner = new MetadataScanner();
  const reflector = new Reflector();
  const routes: Route[] = [];
  const wrappers = [...t.app.get(ModulesContainer).values()].flatMap((m) => [...m.controllers.values()]);
  for (const wrapper of wrappers) {
    const instance = wrapper.instance as object | undefined;
    if (!instance || !wrapper.metatype) continue;
    const base = [Reflect.getMetadata(PATH_METADATA, wrapper.metatype) as string | string[]].flat()[0] ?? '';
    for (const name of scanner.getAllMethodNames(Object.getPrototypeOf(instance))) {
      const handler = (instance as Record<string, unknown>)[name] as (...args: unknown[]) => unknown;
      const path = Reflect.getMetadata(PATH_METADATA, handler) as string | string[] | undefined;
      if (path === undefined) continue;
      const method = RequestMethod[Reflect.getMetadata(METHOD_METADATA, handler) as number];
      const full = ('/' + [base, [path].flat()[0]].filter((p) => p && p !== '/').join('/')).replace(/\/+/g, '/');
      const isPublic = reflector.getAllAndOverride<boolean>(PUBLIC_ROUTE, [handler, wrapper.metatype]);
      const access = reflector.getAllAndOverride(AccessMetadata, [handler, wrapper.metatype]);
      const args = (Reflect.getMetadata(ROUTE_ARGS_METADATA, wrapper.metatype, name) ?? {}) as Record<string, { index: number }>;
      const bodyArg = Object.entries(args).find(([k]) => Number(k.split(':')[0]) === BODY_PARAMTYPE)?.[1];
      const paramTypes = (Reflect.getMetadata('design:paramtypes', Object.getPrototypeOf(instance), name) ?? []) as Function[];
      routes.push({ method, path: full, access: isPublic ? 'public' : access, ...(bodyArg ? { body: paramTypes[bodyArg.index] } : {}) });
    }
  }
  return routes.sort((a, b) => `${a.path} ${a.method}`.localeCompare(`${b.path} ${b.method}`));
}

/**
 * A supertest parser for tests that call every route: an event stream never ends, so its answer
 * is taken as soon as its headers arrive (status and headers are what those tests look at);
 * anything else is read whole, JSON parsed as supertest would.
 */
export function stopAtEventStream(response: any, done: (err: Error | null, body: unknown) => void): void {
  const res = response as import('node:http').IncomingMessage;
  if (String(res.headers['content-type'] ?? '').startsWith('text/event-stream')) {
    done(null, {});
    res.destroy();
    return;
  }
  let text = '';
  res.setEncoding('utf8');
  res.on('data', (chunk: string) => (text += chunk));
  res.on('end', () => {
    let body: unknown = {};
    if (/json/.test(String(res.headers['content-type'] ?? '')) && text !== '') {
      try {
        body = JSON.parse(text);
      } catch {
        body = {};
      }
    }
    done(null, body);
  });
}
