/** Builds one statement out of several data-modifying CTEs, numbering parameters as it goes. */
export class Statement {
  readonly params: unknown[] = [];
  private readonly ctes: string[] = [];

  param(value: unknown): string {
    this.params.push(value);
    return `$${this.params.length}`;
  }

  with(sql: string): this {
    this.ctes.push(`w${this.ctes.length} AS (${sql})`);
    return this;
  }

  finish(lastSql: string): string {
    return this.ctes.length ? `WITH ${this.ctes.join(', ')} ${lastSql}` : lastSql;
  }
}
