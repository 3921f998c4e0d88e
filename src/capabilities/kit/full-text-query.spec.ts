import { anyWordQuery } from './full-text-query';

describe('anyWordQuery', () => {
  it('joins the words of a query with or, dropping phrase quotes, exclusions and existing ors', () => {
    expect(anyWordQuery('how do I get a refund')).toBe('how or do or I or get or a or refund');
    expect(anyWordQuery('"paid leave" -refund')).toBe('paid or leave or refund');
    expect(anyWordQuery('tea OR coffee  or\tcake')).toBe('tea or coffee or cake');
  });

  it('is null when there is nothing to broaden', () => {
    expect(anyWordQuery('refund')).toBeNull();
    expect(anyWordQuery('  "refund" ')).toBeNull();
    expect(anyWordQuery('- or --')).toBeNull();
  });
});
