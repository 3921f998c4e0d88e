import { storage } from 'nestjs-pino/storage';
import { detachedFromCaller } from './trace-context';

describe('detachedFromCaller', () => {
  it("runs the node's own work without the request's logger, now and after it awaits, and leaves the request its own", async () => {
    const requestStore = { marker: 'request a' } as unknown as Parameters<typeof storage.run>[0];
    await storage.run(requestStore, async () => {
      const seen = await detachedFromCaller(async () => {
        const before = storage.getStore();
        await new Promise((resolve) => setTimeout(resolve, 1));
        return [before, storage.getStore()];
      });
      expect(seen).toEqual([undefined, undefined]);
      expect(storage.getStore()).toBe(requestStore);
    });
  });

  it('answers what the work answers', () => {
    expect(detachedFromCaller(() => 42)).toBe(42);
  });
});
