// In a file of their own because app-config.ts imports every section: a section importing it would be a cycle.
export const toInt = ({ value }: { value: unknown }) => (typeof value === 'string' && /^-?\d+$/.test(value.trim()) ? Number(value.trim()) : value);
export const emptyToUndefined = ({ value }: { value: unknown }) => (value === '' ? undefined : value);
