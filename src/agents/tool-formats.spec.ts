import type { OfferedTool } from './built-version';
import { renderTool, toOfferedTool } from './tool-formats';

describe('tool formats', () => {
  const tool: OfferedTool & { digest: string } = {
    name: 'find_notes',
    description: 'Find a note.',
    inputSchema: {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: { q: { type: 'string' } },
      required: ['q'],
      additionalProperties: false,
    },
    capabilityId: 'notes',
    toolId: 'search_notes',
    risk: 'read_only',
    requiresApproval: false,
    digest: 'internal',
  };
  const parameters = { type: 'object', properties: { q: { type: 'string' } }, required: ['q'], additionalProperties: false };

  it('keeps only what the model is offered', () => {
    expect(toOfferedTool(tool)).toEqual({
      name: 'find_notes',
      description: 'Find a note.',
      inputSchema: tool.inputSchema,
      capabilityId: 'notes',
      toolId: 'search_notes',
      risk: 'read_only',
      requiresApproval: false,
    });
  });

  it('renders OpenAI function tools', () => {
    expect(renderTool(tool, 'openai')).toEqual({ type: 'function', function: { name: 'find_notes', description: 'Find a note.', parameters } });
  });

  it('renders Anthropic tools', () => {
    expect(renderTool(tool, 'anthropic')).toEqual({ name: 'find_notes', description: 'Find a note.', input_schema: parameters });
  });
});
