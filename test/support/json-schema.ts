import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { X_ENUM_LABELS, X_MULTILINE } from '../../src/capabilities/form-hints.decorator';

/**
 * ajv for draft 2020-12 in strict mode, as a careful client would run it: unknown keywords,
 * ambiguous types and misplaced constraints are errors. Our two form extensions are declared.
 */
export function strictAjv(): Ajv2020 {
  const ajv = new Ajv2020({ strict: true, allErrors: true, keywords: [X_ENUM_LABELS, X_MULTILINE] });
  addFormats(ajv);
  return ajv;
}
