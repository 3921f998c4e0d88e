import { ApiError, ERROR_STATUS, ErrorCode, titleFor } from './api-error';

describe('ERROR_STATUS', () => {
  it('gives every code an error status that has a title', () => {
    for (const [code, status] of Object.entries(ERROR_STATUS)) {
      expect([code, status >= 400 && status < 600]).toEqual([code, true]);
      expect([code, titleFor(status)]).not.toEqual([code, 'Error']);
    }
  });

  it('is where an ApiError takes its status from', () => {
    for (const code of Object.keys(ERROR_STATUS) as ErrorCode[]) {
      expect(new ApiError(code, 'x').status).toBe(ERROR_STATUS[code]);
    }
    expect(ApiError.conflict('taken').status).toBe(409);
    expect(ApiError.unauthorized().headers).toEqual({ 'WWW-Authenticate': 'Bearer' });
  });
});
