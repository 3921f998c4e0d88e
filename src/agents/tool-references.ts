/**
 * A capability's texts name tools by their declared ids: its prompt ("search with
 * `search_knowledge`"), its tools' descriptions ("the documentId search_knowledge returned"), its
 * tools' error messages. An agent's `toolOverrides` may offer a tool under another name, and then
 * those texts sent the model to a tool it is not offered (`404 unknown_tool`), or, with two names
 * swapped, to the wrong one. So the texts of a version with renames name the offered tools.
 *
 * A reference is a declared id in backticks, or a bare id with an underscore (`load_skill`): an
 * id that is an English word (`remember`, `forget`) is replaced only in backticks, where it cannot
 * be prose. MCP tools (their texts are the vendor's) and descriptions a builder wrote are not
 * touched. Without renames nothing is, so digests and texts of other agents stay as they were.
 */
export class ToolReferences {
  static readonly none = new ToolReferences(new Map());

  private readonly pattern: RegExp | undefined;
  private readonly schemas = new WeakMap<object, Record<string, unknown>>();

  private constructor(private readonly renames: ReadonlyMap<string, string>) {
    if (renames.size === 0) return;
    const ids = [...renames.keys()].sort((a, b) => b.length - a.length).map(escape);
    const bare = ids.filter((id) => id.includes('_'));
    const alternatives = [`\`(${ids.join('|')})\``];
    if (bare.length > 0) alternatives.push(`(?<![\\w-])(${bare.join('|')})(?![\\w-])`);
    this.pattern = new RegExp(alternatives.join('|'), 'g');
  }

  /** The renames of a spec's `toolOverrides`: declared id to offered name, where they differ (MCP keys left out). */
  static of(
    overrides: Readonly<Record<string, { name?: string; description?: string }>> | ReadonlyMap<string, { name?: string; description?: string }> | undefined,
  ): ToolReferences {
    if (!overrides) return ToolReferences.none;
    const entries = overrides instanceof Map ? [...overrides.entries()] : Object.entries(overrides);
    const renames = new Map<string, string>();
    for (const [id, override] of entries) {
      if (id.includes('/') || typeof override?.name !== 'string' || override.name === id) continue;
      renames.set(id, override.name);
    }
    return renames.size === 0 ? ToolReferences.none : new ToolReferences(renames);
  }

  /** The references of a built version's spec, made once per build. */
  static ofVersion(built: { spec: { toolOverrides?: Readonly<Record<string, { name?: string }>> } }): ToolReferences {
    let refs = byBuild.get(built);
    if (!refs) byBuild.set(built, (refs = ToolReferences.of(built.spec.toolOverrides)));
    return refs;
  }

  get empty(): boolean {
    return this.pattern === undefined;
  }

  /** `text` naming the offered tools; one pass, so swapped names do not undo each other. */
  text(text: string): string {
    if (!this.pattern) return text;
    return text.replace(this.pattern, (whole: string, quoted: string | undefined, bare: string | undefined) => {
      const id = quoted ?? bare!;
      const name = this.renames.get(id) ?? id;
      return quoted !== undefined ? `\`${name}\`` : name;
    });
  }

  /** A JSON Schema with every `description` naming the offered tools (a copy, made once per schema). */
  schema(schema: Record<string, unknown>): Record<string, unknown> {
    if (!this.pattern) return schema;
    let resolved = this.schemas.get(schema);
    if (!resolved) this.schemas.set(schema, (resolved = this.walk(schema) as Record<string, unknown>));
    return resolved;
  }

  private walk(value: unknown, key?: string): unknown {
    if (typeof value === 'string') return key === 'description' ? this.text(value) : value;
    if (Array.isArray(value)) return value.map((v) => this.walk(v));
    if (typeof value !== 'object' || value === null) return value;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) Object.defineProperty(out, k, { value: this.walk(v, k), enumerable: true, writable: true, configurable: true });
    return out;
  }
}

const byBuild = new WeakMap<object, ToolReferences>();

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
