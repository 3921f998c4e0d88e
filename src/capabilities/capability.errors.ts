/** The registered set is malformed: the boot stops, and the message names every culprit. */
export class CapabilityRegistrationError extends Error {
  constructor(readonly problems: string[]) {
    super(
      `The capability registry refused to start (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n${problems.map((p) => `  - ${p}`).join('\n')}`,
    );
    this.name = 'CapabilityRegistrationError';
  }
}

/**
 * A capability built tools that differ from its declaration. Never caught and ignored: an
 * undeclared tool would reach a model without the guards that read the declaration.
 */
export class CapabilityDriftError extends Error {
  constructor(
    readonly capabilityId: string,
    /** Built but not declared. */
    readonly undeclared: string[],
    /** Declared but not built. */
    readonly missing: string[],
    /** Built more than once, or without an execute function. */
    readonly malformed: string[],
  ) {
    const parts = [
      undeclared.length ? `undeclared tools [${undeclared.join(', ')}]` : '',
      missing.length ? `missing declared tools [${missing.join(', ')}]` : '',
      malformed.length ? `malformed tools [${malformed.join(', ')}]` : '',
    ].filter(Boolean);
    super(`Capability "${capabilityId}" built tools that differ from its declaration: ${parts.join('; ')}`);
    this.name = 'CapabilityDriftError';
  }
}
