import type { Principal, Role } from '../auth/principal';
import { APPROVER_EVENT_TYPES, streamTypesFor } from './event-visibility';

const key = (...roles: Role[]): Principal => ({ type: 'api_key', id: 'k', orgId: 'o', roles, orgScopes: [] });

describe('streamTypesFor', () => {
  it('gives an admin every type, or those asked', () => {
    expect(streamTypesFor(key('admin'), undefined)).toBeUndefined();
    expect(streamTypesFor(key('approver', 'admin'), ['api_key.created'])).toEqual(['api_key.created']);
  });

  it("gives an approver its work's types, or those asked among them", () => {
    expect(streamTypesFor(key('approver'), undefined)).toEqual(APPROVER_EVENT_TYPES);
    expect(streamTypesFor(key('approver', 'viewer'), ['approval.requested'])).toEqual(['approval.requested']);
  });

  it('refuses an approver a type of the audit log, naming each', () => {
    let error: unknown;
    try {
      streamTypesFor(key('approver'), ['approval.requested', 'webhook.created', 'api_key.created']);
    } catch (err) {
      error = err;
    }
    expect(error).toMatchObject({ status: 403, code: 'forbidden', errors: [{ path: 'types[1]' }, { path: 'types[2]' }] });
  });
});
