import { jsonDepthExceeds, jsonMembersExceed, MAX_JSON_DEPTH } from './json-depth';

const nested = (depth: number, open = '{"a":', close = '}') => open.repeat(depth) + '1' + close.repeat(depth);

describe('JSON nesting bound', () => {
  it('accepts bodies up to the bound and refuses deeper ones', () => {
    expect(jsonDepthExceeds(nested(MAX_JSON_DEPTH))).toBe(false);
    expect(jsonDepthExceeds(nested(MAX_JSON_DEPTH + 1))).toBe(true);
    expect(jsonDepthExceeds(nested(MAX_JSON_DEPTH + 1, '[', ']'))).toBe(true);
    expect(jsonDepthExceeds('[' + '[],'.repeat(10_000) + '[]]')).toBe(false);
  });

  it('does not count brackets inside strings, escaped quotes included', () => {
    expect(jsonDepthExceeds(JSON.stringify({ s: '{'.repeat(500) }))).toBe(false);
    expect(jsonDepthExceeds(JSON.stringify({ s: '\\"' + '['.repeat(500) }))).toBe(false);
    expect(jsonDepthExceeds(JSON.stringify({ s: 'x\\' }) + '[[['.repeat(30), 64)).toBe(true);
  });
});

describe('JSON member count (attack round 15, R-F5)', () => {
  it('counts the colons of object members, not those inside strings or escaped quotes', () => {
    expect(jsonMembersExceed('{"a":1,"b":{"c":2}}', 3)).toBe(false);
    expect(jsonMembersExceed('{"a":1,"b":{"c":2}}', 2)).toBe(true);
    expect(jsonMembersExceed(JSON.stringify({ s: 'x:y:z "q": r\\":' }), 1)).toBe(false);
    expect(jsonMembersExceed(JSON.stringify(Array.from({ length: 100 }, () => ({ k: 1 }))), 99)).toBe(true);
  });
});
