import { anyWordQuery, boundedNegations } from './full-text-query';

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

describe('boundedNegations', () => {
  it('writes a run of three or more negations as one or two, keeping their parity', () => {
    expect(boundedNegations('---refund')).toBe(' -refund');
    expect(boundedNegations('----refund')).toBe(' --refund');
    expect(boundedNegations(`${'-'.repeat(500)}`)).toBe(' --');
    expect(boundedNegations('a - | - ( - b')).toBe('a  - b');
    expect(boundedNegations('x\u2003-\t-\n-!-&-<-)-y')).toBe('x\u2003 -y');
  });

  it('leaves single and double dashes, hyphenated words and phrases alone', () => {
    for (const query of ['-refund', '--refund', 'e-mail', 'paid -leave', '"well-known"', 'a - - b', 'a-b-c-d']) expect(boundedNegations(query)).toBe(query);
  });
});
