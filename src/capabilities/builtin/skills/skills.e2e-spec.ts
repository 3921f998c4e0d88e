import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { SkillsRepository } from '../../../skills/skills.repository';
import { CapabilityRegistry } from '../../capability-registry.service';
import type { StampedContribution, ToolContext } from '../../capability.types';
import { LIST_SKILLS_MAX_TOKENS, ListSkillsInput, LoadSkillInput } from './skills.tools';
import { resultTokens } from '../../kit/tool-output';
import {
  buildWith,
  callTool,
  configErrors,
  contextFor,
  createAgent,
  createSkill,
  inputErrors,
  resolveResources,
  TestAgent,
  toolContext,
  toolError,
} from '../../../../test/support/builtins';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from '../../../../test/support/test-app';

describe('builtin capability: skills (e2e)', () => {
  let t: TestApp;
  let registry: CapabilityRegistry;
  let org: TestOrg;
  let other: TestOrg;
  let agent: TestAgent;
  const skills: Record<string, string> = {};
  let built: StampedContribution | null;
  let tc: ToolContext;

  beforeAll(async () => {
    t = await createTestApp();
    registry = t.app.get(CapabilityRegistry);
    org = await createOrg(t);
    other = await createOrg(t);
    agent = await createAgent(t, org);
    skills.refunds = await createSkill(
      t,
      org,
      'Refunds',
      'When a customer asks\nfor money back',
      '1. Find the order.\n2. Check it is under 30 days old.\n3. Refund it.',
    );
    skills.escalate = await createSkill(t, org, 'Escalation', 'When the customer is angry or asks for a manager', 'Apologize once, then hand over to a human.');
    skills.unbound = await createSkill(t, org, 'Payroll', 'Internal only', 'Never shown to the agent.');
    skills.theirs = await createSkill(t, other, 'Refunds', 'Another organization', 'Their instructions.');
    const resources = await resolveResources(t, org.id, { skills: [skills.refunds, skills.escalate] });
    built = await buildWith(registry, 'skills', contextFor(org, agent, {}, resources));
    tc = toolContext(org.id, agent.id);
  });
  afterAll(() => t.close());

  const list = (ctx = tc) => callTool(registry, built, 'list_skills', {}, ctx);
  const load = (name: string, ctx = tc, from = built) => callTool(registry, from, 'load_skill', { name }, ctx);

  it('is listed with two read-only tools, no scope and no config', async () => {
    const res = await t.http
      .get('/api/v1/agents/capabilities')
      .set(...bearer(org.keys.viewer))
      .expect(200);
    const entry = res.body.items.find((i: { id: string }) => i.id === 'skills');
    expect(entry).toMatchObject({ scopes: [], available: true, risk: 'read_only', sideEffecting: false });
    expect(entry.tools.map((x: { id: string; requiresApproval: boolean }) => [x.id, x.requiresApproval])).toEqual([
      ['list_skills', false],
      ['load_skill', false],
    ]);
    expect(entry.configSchema).toEqual({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: {},
      additionalProperties: false,
    });
    expect(entry.tools[0].inputSchema).toMatchObject({ type: 'object', properties: {}, additionalProperties: false });
    expect(configErrors(registry, 'skills', { anything: true })).toEqual(['anything']);
    expect(registry.get('skills')!.tools.map((x) => x.declaration.input)).toEqual([ListSkillsInput, LoadSkillInput]);
  });

  it('contributes nothing when no skill is bound', async () => {
    expect(await buildWith(registry, 'skills', contextFor(org, agent, {}))).toBeNull();
  });

  it('lists each bound skill by name and when it applies in the prompt, without the instructions', () => {
    expect(built!.tools.map((x) => x.id)).toEqual(['list_skills', 'load_skill']);
    expect(typeof built!.prompt).toBe('function');
    expect((built!.prompt as () => string)()).toBe(
      'You have these skills. Before a task that matches one, load its instructions with `load_skill` and follow them:\n' +
        '- **Refunds**: When a customer asks for money back\n' +
        '- **Escalation**: When the customer is angry or asks for a manager',
    );
  });

  it('list_skills lists the bound skills in the order the agent binds them, and nothing else', async () => {
    expect(await list()).toEqual({
      skills: [
        { id: skills.refunds, name: 'Refunds', description: 'When a customer asks\nfor money back' },
        { id: skills.escalate, name: 'Escalation', description: 'When the customer is angry or asks for a manager' },
      ],
    });
    expect(await list(toolContext(other.id, agent.id))).toEqual({ skills: [] });
    expect(inputErrors(registry, 'skills', 'list_skills', { all: true })).toEqual(['all']);
  });

  it('list_skills called concurrently from two organizations answers each from its own skills only', async () => {
    // Concurrent reads share one statement (the repository batches them): none may see another's rows.
    const theirAgent = await createAgent(t, other);
    const theirs = await buildWith(registry, 'skills', contextFor(other, theirAgent, {}, await resolveResources(t, other.id, { skills: [skills.theirs] })));
    const ours = {
      skills: [
        { id: skills.refunds, name: 'Refunds', description: 'When a customer asks\nfor money back' },
        { id: skills.escalate, name: 'Escalation', description: 'When the customer is angry or asks for a manager' },
      ],
    };
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 ? callTool(registry, theirs, 'list_skills', {}, toolContext(other.id, theirAgent.id)) : list())),
    );
    answers.forEach((a, i) => expect(a).toEqual(i % 2 ? { skills: [{ id: skills.theirs, name: 'Refunds', description: 'Another organization' }] } : ours));
    // The other organization's ids asked from ours, in the same burst, match nothing.
    const crossed = await Promise.all([callTool(registry, theirs, 'list_skills', {}, tc), list(toolContext(other.id, agent.id)), list()]);
    expect(crossed).toEqual([{ skills: [] }, { skills: [] }, ours]);
  });

  it('list_skills leaves skills out, and says how many, rather than overflowing its output budget', async () => {
    const many: string[] = [];
    for (let i = 0; i < 12; i++)
      many.push(await createSkill(t, org, `Skill ${i}`, `Applies to case ${i}: ` + 'a long description of when it applies. '.repeat(50), 'Do it.'));
    const wide = await buildWith(registry, 'skills', contextFor(org, agent, {}, await resolveResources(t, org.id, { skills: many })));
    const res = await callTool(registry, wide, 'list_skills', {}, tc);
    expect(res.omitted).toBeGreaterThan(0);
    expect(res.skills.length + res.omitted).toBe(12);
    expect(res.message).toBe(`Left out to keep this list short: ${res.omitted} more skills. Their names are in your instructions.`);
    expect(resultTokens(res)).toBeLessThanOrEqual(LIST_SKILLS_MAX_TOKENS);
  });

  it('load_skill returns the instructions of a bound skill, by exact name, any case, or id', async () => {
    const refunds = {
      id: skills.refunds,
      name: 'Refunds',
      description: 'When a customer asks\nfor money back',
      instructions: '1. Find the order.\n2. Check it is under 30 days old.\n3. Refund it.',
    };
    expect(await load('Refunds')).toEqual(refunds);
    expect(await load('  refunds ')).toEqual(refunds);
    expect(await load(skills.refunds)).toEqual(refunds);
    expect((await load('ESCALATION')).instructions).toBe('Apologize once, then hand over to a human.');
  });

  it('load_skill answers an error the model can act on for a skill that is not bound', async () => {
    for (const name of ['Payroll', 'Refund', skills.unbound, skills.theirs]) {
      expect(await toolError(load(name))).toEqual({
        code: 'skill_not_found',
        message: `You have no skill named "${name}". Your skills are: "Refunds", "Escalation". Use one of these names exactly, or carry on without a skill.`,
      });
    }
    // Called in another organization's context, the bound ids match nothing there.
    expect(await toolError(load('Refunds', toolContext(other.id, agent.id)))).toEqual({
      code: 'skill_not_found',
      message: 'You have no skill named "Refunds". No skill is available to you: carry on without one.',
    });
    expect(inputErrors(registry, 'skills', 'load_skill', {})).toEqual(['name']);
    expect(inputErrors(registry, 'skills', 'load_skill', { name: 'x'.repeat(201) })).toEqual(['name']);
  });

  it('load_skill asks for the id when two bound skills share a name', async () => {
    const twin = await createSkill(t, org, 'refunds', 'For business customers', 'Send it to accounts.');
    const both = await buildWith(
      registry,
      'skills',
      contextFor(org, agent, {}, await resolveResources(t, org.id, { skills: [skills.refunds, twin, randomUUID()] })),
    );
    const err = await toolError(load('REFUNDS', tc, both));
    expect(err).toEqual({
      code: 'ambiguous_skill',
      message: `Several of your skills are named "REFUNDS". Load one by its id instead: ${skills.refunds} (When a customer asks\nfor money back); ${twin} (For business customers).`,
    });
    // The exact name still picks one.
    expect((await load('refunds', tc, both)).id).toBe(twin);
    expect((await load(twin, tc, both)).instructions).toBe('Send it to accounts.');
  });

  it("reads a skill's instructions only for load_skill, one skill at a time, never for a list or a build", async () => {
    // 400 KB of instructions (the 100,000-character limit, in astral characters): 200 of them on
    // every cached version and in every list_skills read took the node's heap (attack round 6).
    const big = await createSkill(t, org, 'Big', 'Large instructions', '😀'.repeat(100_000));
    const resolved = await resolveResources(t, org.id, { skills: [skills.refunds, big] });
    expect(resolved.skills.map((s) => Object.keys(s).sort())).toEqual([
      ['description', 'id', 'name'],
      ['description', 'id', 'name'],
    ]);
    const withBig = await buildWith(registry, 'skills', contextFor(org, agent, {}, resolved));
    const queries = jest.spyOn(DataSource.prototype, 'query');
    try {
      const listed = await list(tc);
      expect(listed.skills.map((s: { name: string }) => s.name)).toEqual(['Refunds', 'Escalation']);
      const loaded = await load('Big', tc, withBig);
      expect(loaded.instructions).toBe('😀'.repeat(100_000));
      const read = queries.mock.calls.map((c) => String(c[0]));
      expect(read.filter((q) => /instructions/.test(q))).toEqual([expect.stringMatching(/^SELECT instructions FROM skill WHERE org_id = \$1 AND id = \$2$/)]);
    } finally {
      queries.mockRestore();
    }
  });

  it('answers skill_not_found for a skill deleted between its match and the read of its instructions', async () => {
    // A skill bound only by a draft can be deleted at any moment; the two reads are not one statement.
    const read = jest.spyOn(SkillsRepository.prototype, 'instructionsOf').mockResolvedValueOnce(undefined);
    try {
      const err = await toolError(load('Refunds'));
      expect(err.code).toBe('skill_not_found');
      expect(read).toHaveBeenCalledWith(org.id, skills.refunds);
    } finally {
      read.mockRestore();
    }
  });
});
