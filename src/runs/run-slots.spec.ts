import { mayStart, reservedSlots, sharedLeft, SlotCaps } from './run-slots';

/**
 * Organizations whose providers take a request and never answer each fill their share of a node;
 * how many it takes before another organization's run finds no slot. Each starts runs while it
 * may, in turn, as an attacker with a backlog would.
 */
function hungOrganizationsToFill(caps: SlotCaps): number {
  const holding: number[] = [];
  let active = 0;
  while (active < caps.max) {
    let started = false;
    for (let i = 0; i < holding.length; i++) {
      while (mayStart(caps, active, holding[i])) {
        holding[i]++;
        active++;
        started = true;
      }
    }
    if (!started) {
      // Nobody already here may start more: a new organization comes.
      if (!mayStart(caps, active, 0)) break;
      holding.push(1);
      active++;
    }
  }
  return holding.length;
}

describe("a node's run slots", () => {
  const defaults: SlotCaps = { max: 16, perOrg: 4, reserved: 4 };

  it('an organization already stepping here starts another only while that leaves the reserve free; one stepping none takes any free slot', () => {
    expect(mayStart(defaults, 11, 1)).toBe(true);
    expect(mayStart(defaults, 12, 1)).toBe(false);
    expect(mayStart(defaults, 12, 0)).toBe(true);
    expect(mayStart(defaults, 15, 0)).toBe(true);
    expect(mayStart(defaults, 16, 0)).toBe(false);
    expect(mayStart(defaults, 3, 4)).toBe(false);
    expect(sharedLeft(defaults, 9)).toBe(3);
    expect(sharedLeft(defaults, 14)).toBe(0);
  });

  it('takes seven hung organizations to fill a node on defaults, where four did without the reserve', () => {
    expect(hungOrganizationsToFill({ ...defaults, reserved: 0 })).toBe(4);
    expect(hungOrganizationsToFill(defaults)).toBe(7);
    // The e2e suite's node: 4 slots, 2 per organization, 1 kept: two hung organizations leave it a slot.
    expect(hungOrganizationsToFill({ max: 4, perOrg: 2, reserved: 1 })).toBe(3);
    expect(hungOrganizationsToFill({ max: 4, perOrg: 2, reserved: 0 })).toBe(2);
  });

  it('one organization alone steps its whole share when the reserve is the default', () => {
    for (const [max, perOrg] of [
      [16, 4],
      [16, 16],
      [16, 14],
      [3, 1],
      [2, 2],
    ]) {
      const caps = { max, perOrg, reserved: reservedSlots(max, perOrg) };
      let holding = 0;
      while (mayStart(caps, holding, holding)) holding++;
      expect(holding).toBe(perOrg);
    }
  });
});
