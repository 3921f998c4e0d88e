/** Joins a property path the way clients read it: `capabilities[0].config.units`. */
export function joinPath(parent: string, property: string): string {
  if (/^\d+$/.test(property)) return `${parent}[${property}]`;
  return parent ? `${parent}.${property}` : property;
}
