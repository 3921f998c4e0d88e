// The scripted model is dev tooling shared with `npm run demo`; tests import it from there.
export * from '../../scripts/scripted-model';
