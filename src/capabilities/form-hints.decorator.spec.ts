import { IsIn, IsString } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import { classSchema } from './class-schema';
import { EnumLabels, Multiline, X_ENUM_LABELS, X_MULTILINE } from './form-hints.decorator';

describe('form hints', () => {
  it('add to a @JSONSchema written below them instead of replacing it', () => {
    class Config {
      @IsIn(['a', 'b'])
      @EnumLabels({ a: 'First', b: 'Second' })
      @JSONSchema({ title: 'Choice', description: 'Pick one.' })
      choice: string = 'a';

      @IsString()
      @Multiline()
      @JSONSchema((source) => ({ ...source, title: 'Notes' }))
      notes: string = '';

      @IsString()
      @Multiline()
      plain: string = '';
    }
    const { schema, problems } = classSchema(Config, { requireDefaults: true });
    expect(problems).toEqual([]);
    expect(schema.properties).toEqual({
      choice: { type: 'string', enum: ['a', 'b'], title: 'Choice', description: 'Pick one.', [X_ENUM_LABELS]: { a: 'First', b: 'Second' }, default: 'a' },
      notes: { type: 'string', title: 'Notes', [X_MULTILINE]: true, default: '' },
      plain: { type: 'string', [X_MULTILINE]: true, default: '' },
    });
  });
});
