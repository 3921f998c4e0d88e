/**
 * A node's run slots, shared by organizations. A run holds its slot while its model answers, so an
 * organization whose provider takes requests and stays silent holds each of its slots until the
 * call gives up. The per-organization share (RUN_MAX_CONCURRENT_PER_ORG) alone let four such
 * organizations fill a node (16 = 4 × 4) and stop everyone else's runs on every node. So the last
 * `reserved` slots (RUN_RESERVED_FOR_NEW_ORGS) go only to organizations stepping no run on the
 * node, one each: an organization already stepping one starts another only while that leaves
 * `reserved` slots free, and filling a node takes `ceil((max - reserved) / perOrg) + reserved`
 * organizations instead of `max / perOrg`.
 */
export interface SlotCaps {
  /** RUN_MAX_CONCURRENT. */
  max: number;
  /** RUN_MAX_CONCURRENT_PER_ORG. */
  perOrg: number;
  /** RUN_RESERVED_FOR_NEW_ORGS: below max. */
  reserved: number;
}

/** Whether a run of an organization stepping `holding` runs here may start while the node steps `active`. */
export function mayStart(caps: SlotCaps, active: number, holding: number): boolean {
  if (active >= caps.max || holding >= caps.perOrg) return false;
  return holding === 0 || active < caps.max - caps.reserved;
}

/** How many more runs organizations already stepping here may start now (a newcomer's first run takes any free slot). */
export function sharedLeft(caps: SlotCaps, active: number): number {
  return Math.max(0, caps.max - caps.reserved - active);
}

/**
 * The reserve when RUN_RESERVED_FOR_NEW_ORGS is unset: a quarter of the slots, at least 1 when
 * there are two or more, but never so many that one organization alone could not step its whole
 * share (a single-tenant deployment that sets RUN_MAX_CONCURRENT_PER_ORG to RUN_MAX_CONCURRENT keeps
 * every slot). A value that is set is kept below `max`, so some organization can always start.
 */
export function reservedSlots(max: number, perOrg: number, configured?: number): number {
  if (configured !== undefined) return Math.min(configured, max - 1);
  if (max < 2) return 0;
  return Math.min(Math.max(1, Math.floor(max / 4)), max - perOrg);
}
