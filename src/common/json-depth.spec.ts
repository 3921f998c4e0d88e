import { MAX_JSON_DEPTH, MAX_JSON_KEYS } from './json-depth';
import { jsonShapeRefusal } from './json-shape';

const jsonDepthExceeds = (text: string, max = MAX_JSON_DEPTH) => jsonShapeRefusal(text, max, MAX_JSON_KEYS) === 'depth';

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
