/**
 * What a scope looks like (`knowledge:read`, `crm.contacts:write`). A domain rule shared by the
 * organizations that grant scopes, the capabilities that declare them and the tool policy that
 * compares them; the HTTP DTOs validate with it rather than own it.
 */
export const SCOPE_PATTERN = /^[a-z0-9_.-]+(:[a-z0-9_.-]+)*$/;
