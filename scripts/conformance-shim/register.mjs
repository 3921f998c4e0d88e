// `node --import ./scripts/conformance-shim/register.mjs`: the conformance CLI imports
// `globSync` from `fs`, which Node 22 has and Node 20 (our runtime) does not. On Node 20 its
// `fs` import is answered by fs.mjs (node:fs plus a small globSync); elsewhere nothing changes.
import { register } from 'node:module';
import fs from 'node:fs';

if (typeof fs.globSync !== 'function') register('./hooks.mjs', import.meta.url);
