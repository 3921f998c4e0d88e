import 'reflect-metadata';
import { jsonDepthExceeds } from './src/common/json-depth';
import { findUnstorableText } from './src/common/nul-character';
import { checkShape, toInstance } from './src/common/bounded-transform';
import { validateWithClass } from './src/capabilities/class-validation';
import { createValidationPipe } from './src/common/validation';
import { CreateToolCallDto } from './src/tool-calls/tool-calls.dto';
import { SearchKnowledgeInput } from './src/capabilities/builtin/knowledge/knowledge.tools';
const parts: string[] = []; for (let i = 0; i < 70000; i++) parts.push(`"k${i}":null`);
const text = `{"tool":"search_knowledge","arguments":{"query":"refunds",${parts.join(',')}}}`;
async function main() {
for (let round = 0; round < 2; round++) {
let s = performance.now(); jsonDepthExceeds(text); console.log('depth', performance.now() - s);
s = performance.now(); const body = JSON.parse(text); console.log('parse', performance.now() - s);
s = performance.now(); findUnstorableText(body); console.log('unstorable', performance.now() - s);
s = performance.now(); const pipe = createValidationPipe(); const dto: any = await pipe.transform(body, { type: 'body', metatype: CreateToolCallDto }); console.log('pipe', performance.now() - s);
s = performance.now(); const r = validateWithClass(SearchKnowledgeInput as any, dto.arguments); console.log('validateWithClass', performance.now() - s, r.errors.length, r.omitted);
}
}
main();
