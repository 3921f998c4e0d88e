import { IsString } from 'class-validator';
import { Capability } from './capability.decorator';

class Input {
  @IsString() text: string;
}

describe('@Capability()', () => {
  it('stores the declaration under the key discovery indexes', () => {
    const definition = { id: 'x', name: 'X', category: 'c', description: 'd', tools: [] };
    @Capability(definition)
    class Declared {}
    expect(Reflect.getMetadata(Capability.KEY, Declared)).toBe(definition);
  });

  // The `@ts-expect-error` lines are the test: `tsc --noEmit` fails if any of them compiles.
  it('makes a missing declaration, tools list or risk a compile error', () => {
    const neverCalled = () => {
      // @ts-expect-error the declaration is required
      @Capability()
      class Nothing {}

      // @ts-expect-error tools is required ([] for none)
      @Capability({ id: 'x', name: 'X', category: 'c', description: 'd' })
      class NoTools {}

      @Capability({
        id: 'x',
        name: 'X',
        category: 'c',
        description: 'd',
        // @ts-expect-error a tool's risk is required: forgetting it must not make the tool read-only
        tools: [{ id: 't', description: 'd', input: Input }],
      })
      class NoRisk {}
      return [Nothing, NoTools, NoRisk];
    };
    expect(typeof neverCalled).toBe('function');
  });
});
