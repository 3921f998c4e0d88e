import type { McpConnectionsRepository, McpConnectionSummary } from './mcp-connections.repository';
import { STORED_LISTS_CACHED_CHARS, STORED_LISTS_CACHED_CHARS_PER_ORG, StoredToolLists } from './stored-tool-lists';

/**
 * One organization's agents binding more lists than the node keeps, called in turn, made every
 * call of every organization read, parse and digest its lists again (attack round 12, J-F1).
 */
describe('StoredToolLists', () => {
  /** A list of about `chars` characters of JSON. */
  const listOf = (chars: number) => JSON.stringify([{ name: 't', description: 'x'.repeat(chars - 60), inputSchema: {} }]);
  const row = (orgId: string, id: string): McpConnectionSummary => ({ org_id: orgId, id, tools_digest: `d-${id}` }) as McpConnectionSummary;

  function lists(size: (id: string) => number) {
    const reads: string[] = [];
    let inFlight = 0;
    let most = 0;
    const repository = {
      getTools: async (_orgId: string, id: string) => {
        reads.push(id);
        most = Math.max(most, ++inFlight);
        await new Promise((resolve) => setTimeout(resolve, 5));
        inFlight--;
        return { json: listOf(size(id)), digest: `d-${id}` };
      },
    } as unknown as McpConnectionsRepository;
    return { stored: new StoredToolLists(repository), reads, most: () => most };
  }

  it('keeps a list it read: the next build of it reads nothing', async () => {
    const { stored, reads } = lists(() => 1_000);
    await stored.of(row('org-a', 'c1'));
    await stored.of(row('org-a', 'c1'));
    expect(reads).toEqual(['c1']);
  });

  it("an organization past its share evicts its own least recently used lists, never another organization's", async () => {
    const quarter = STORED_LISTS_CACHED_CHARS_PER_ORG / 2 - 1_000;
    const { stored, reads } = lists(() => quarter);
    await stored.of(row('other', 'kept'));
    for (const id of ['a1', 'a2', 'a3', 'a4', 'a1', 'a2']) await stored.of(row('org-a', id));
    expect(reads).toEqual(['kept', 'a1', 'a2', 'a3', 'a4', 'a1', 'a2']);
    reads.length = 0;
    await stored.of(row('other', 'kept'));
    await stored.of(row('org-a', 'a2'));
    expect(reads).toEqual([]);
  });

  it('the node keeps at most its bound, the least recently used list going first', async () => {
    const share = STORED_LISTS_CACHED_CHARS_PER_ORG - 1_000;
    const { stored, reads } = lists(() => share);
    const orgs = Array.from({ length: STORED_LISTS_CACHED_CHARS / STORED_LISTS_CACHED_CHARS_PER_ORG + 1 }, (_, i) => `org-${i}`);
    for (const org of orgs) await stored.of(row(org, `c-${org}`));
    reads.length = 0;
    await stored.of(row(orgs[orgs.length - 1], `c-${orgs[orgs.length - 1]}`));
    expect(reads).toEqual([]);
    await stored.of(row(orgs[0], `c-${orgs[0]}`));
    expect(reads).toEqual([`c-${orgs[0]}`]);
  });

  it("reads one organization's lists one at a time, and a list read while a request waited is not read again", async () => {
    const { stored, reads, most } = lists(() => 1_000);
    await Promise.all([...['c1', 'c2', 'c3', 'c1', 'c2'].map((id) => stored.of(row('org-a', id))), stored.of(row('org-b', 'c9'))]);
    expect(reads.filter((id) => id !== 'c9').sort()).toEqual(['c1', 'c2', 'c3']);
    // org-b's read ran beside org-a's: one each at once.
    expect(most()).toBe(2);
  });

  it('a list larger than an organization may keep is used but not kept; a row read with its tools is kept as it is', async () => {
    const { stored, reads } = lists(() => STORED_LISTS_CACHED_CHARS_PER_ORG + 1_000);
    await stored.of(row('org-a', 'huge'));
    await stored.of(row('org-a', 'huge'));
    expect(reads).toEqual(['huge', 'huge']);
    const tools = [{ name: 't', description: 'd', inputSchema: {} }];
    const first = await stored.of({ ...row('org-a', 'fresh'), tools });
    expect(await stored.of(row('org-a', 'fresh'))).toBe(first);
    expect(reads).toEqual(['huge', 'huge']);
  });

  it('weighs a list read from the database as listed, not as PostgreSQL prints it (attack round 21, AD-F1)', async () => {
    // A list within what a listing stores (MAX_LIST_CHARS, compact), printed by jsonb with a space
    // after every `,` and `:`: half as long again, past an organization's share. Was read every time.
    const tools = Array.from({ length: 8 }, (_, i) => ({
      name: `t${i}`,
      description: 'd',
      inputSchema: { type: 'object', properties: { v: { enum: new Array<number>(Math.floor((STORED_LISTS_CACHED_CHARS_PER_ORG - 2_000) / 16)).fill(0) } } },
    }));
    const printed = JSON.stringify(tools).replace(/[,:]/g, '$& ');
    expect(JSON.stringify(tools).length).toBeLessThan(STORED_LISTS_CACHED_CHARS_PER_ORG);
    expect(printed.length).toBeGreaterThan(STORED_LISTS_CACHED_CHARS_PER_ORG * 1.4);
    const reads: string[] = [];
    const repository = {
      getTools: async (_orgId: string, id: string) => {
        reads.push(id);
        return { json: printed, digest: `d-${id}` };
      },
    } as unknown as McpConnectionsRepository;
    const stored = new StoredToolLists(repository);
    const first = await stored.of(row('org-a', 'spaced'));
    expect(await stored.of(row('org-a', 'spaced'))).toBe(first);
    expect(reads).toEqual(['spaced']);
    expect(first.chars).toBe(JSON.stringify(tools).length);
  });

  it('a connection deleted since its row was read has an empty list', async () => {
    const repository = { getTools: async () => undefined } as unknown as McpConnectionsRepository;
    expect((await new StoredToolLists(repository).of(row('org-a', 'gone'))).tools).toEqual([]);
  });
});
