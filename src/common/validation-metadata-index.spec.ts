import 'reflect-metadata';
import { getMetadataStorage, IsInt, IsOptional, IsString, MaxLength, MetadataStorage, Min, validateSync } from 'class-validator';
import { installValidationMetadataIndex } from './validation-metadata-index';

installValidationMetadataIndex();

class Base {
  @IsString()
  name: string;

  @IsInt({ groups: ['admin'] })
  level: number;
}

class Middle extends Base {
  @IsOptional()
  @MaxLength(5)
  override name = '';

  @Min(1, { always: true })
  count: number;
}

class Leaf extends Middle {
  @IsInt({ always: false })
  extra: number;
}

class Unrelated {
  @IsString()
  other: string;
}

const storage = getMetadataStorage();
const original = (target: Function, always: boolean, strictGroups: boolean, groups?: string[]) =>
  MetadataStorage.prototype.getTargetValidationMetadatas.call(storage, target, '', always, strictGroups, groups);

describe('the indexed lookup of class-validator rules', () => {
  it.each([
    [true, false, undefined],
    [false, false, undefined],
    [false, true, undefined],
    [false, false, ['admin']],
    [true, true, ['admin', 'other']],
  ] as [boolean, boolean, string[] | undefined][])(
    'finds what class-validator finds, in its order (always %s, strict %s, groups %j)',
    (always, strict, groups) => {
      for (const cls of [Base, Middle, Leaf, Unrelated, Object]) {
        expect(storage.getTargetValidationMetadatas(cls, '', always, strict, groups)).toEqual(original(cls, always, strict, groups));
      }
    },
  );

  it('sees a rule added after a lookup (a class defined later, as tests do)', () => {
    expect(storage.getTargetValidationMetadatas(Leaf, '', true, false)).toHaveLength(original(Leaf, true, false).length);
    class Later extends Leaf {
      @IsString()
      late: string;
    }
    const found = storage.getTargetValidationMetadatas(Later, '', true, false).map((m) => m.propertyName);
    expect(found).toContain('late');
    expect(found).toContain('extra');
    expect(storage.getTargetValidationMetadatas(Later, '', true, false)).toEqual(original(Later, true, false));
  });

  it('still validates inherited rules (a rule in a group applies when no groups are asked for, as in class-validator)', () => {
    const leaf = Object.assign(new Leaf(), { name: 'too long a name', count: 0, extra: 1.5 });
    const failed = validateSync(leaf)
      .map((e) => e.property)
      .sort();
    expect(failed).toEqual(['count', 'extra', 'level', 'name']);
  });

  it('hands out a copy, so a caller that changes its list changes no other caller’s', () => {
    const first = storage.getTargetValidationMetadatas(Base, '', true, false);
    first.length = 0;
    expect(storage.getTargetValidationMetadatas(Base, '', true, false).length).toBeGreaterThan(0);
  });
});
