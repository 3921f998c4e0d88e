import { visibleInSnapshot } from './event-log.repository';

/** What PostgreSQL's pg_visible_in_snapshot answers, for the streams that share a read and skip in JS. */
describe('visibleInSnapshot', () => {
  it('sees what ended before the snapshot, not what ran in it or began after it', () => {
    const snapshot = '100:110:100,104,107';
    expect(visibleInSnapshot(99n, snapshot)).toBe(true);
    expect(visibleInSnapshot(100n, snapshot)).toBe(false);
    expect(visibleInSnapshot(103n, snapshot)).toBe(true);
    expect(visibleInSnapshot(104n, snapshot)).toBe(false);
    expect(visibleInSnapshot(109n, snapshot)).toBe(true);
    expect(visibleInSnapshot(110n, snapshot)).toBe(false);
  });

  it('reads a snapshot with nothing running, and ids past 2^53', () => {
    expect(visibleInSnapshot(9n, '10:10:')).toBe(true);
    expect(visibleInSnapshot(10n, '10:10:')).toBe(false);
    expect(visibleInSnapshot(9007199254740993n, '9007199254740992:9007199254740995:9007199254740993')).toBe(false);
    expect(visibleInSnapshot(9007199254740994n, '9007199254740992:9007199254740995:9007199254740993')).toBe(true);
  });
});
