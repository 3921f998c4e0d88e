import Fastify from 'fastify';

/**
 * The floor of this machine and runtime: Fastify answering `{}`, no logging, no hooks. Nothing an
 * HTTP service written in Node on this machine can do is faster.
 */
async function main(): Promise<void> {
  const app = Fastify({ logger: false });
  app.get('/', async () => ({}));
  const address = await app.listen({ port: Number(process.env.PORT ?? 0), host: process.env.HOST ?? '127.0.0.1' });
  process.stdout.write(`listening on ${address}\n`);
  const stop = () => void app.close().then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

void main();
