import { ok, type Schemas } from '../api/client';
import { Alert, errorId, FieldErrors, fieldId, useLoad, type ErrorMap } from '../components/feedback';
import { Link } from '../router';
import { useSession } from '../session';

type AgentSpec = Schemas['AgentSpecDto'];
type ModelRef = Schemas['ModelRefDto'];

/** The optional numbers of a model, as the API names them and a person reads them. */
const NUMBERS: { key: 'temperature' | 'maxOutputTokens' | 'contextWindow'; label: string; help: string; step: string }[] = [
  { key: 'temperature', label: 'Temperature', help: "Empty: the provider's default.", step: 'any' },
  { key: 'maxOutputTokens', label: 'Most tokens in one answer', help: "Empty: the provider's default.", step: '1' },
  {
    key: 'contextWindow',
    label: 'Context window (tokens)',
    help: 'How much the model reads at most; a run compacts before it outgrows this. Empty: 128000.',
    step: '1',
  },
];

/**
 * The model the agent's runs call: one of the organization's providers and the model's name there.
 * Optional (an agent whose tools are called over REST or MCP needs none), checked at publish. A
 * half-filled model is sent as it is, so the server's refusal lands at the field it names.
 */
export function ModelSection({ spec, errors, readOnly, onSpec }: { spec: AgentSpec; errors: ErrorMap; readOnly: boolean; onSpec(spec: AgentSpec): void }) {
  const { api } = useSession();
  const providers = useLoad(() => ok(api.GET('/api/v1/model-providers', { params: { query: { limit: 200 } } })), [api]);
  const model: Partial<ModelRef> = spec.model ?? {};
  const set = (patch: Partial<ModelRef>) => {
    const next = { ...model, ...patch };
    for (const k of Object.keys(next) as (keyof ModelRef)[]) if (next[k] === undefined || next[k] === '') delete next[k];
    const rest = { ...spec };
    delete rest.model;
    onSpec(Object.keys(next).length ? { ...rest, model: next as ModelRef } : rest);
  };
  const described = (path: string, help?: string) => [help ?? '', errors.has(path) ? errorId(path) : ''].filter(Boolean).join(' ') || undefined;
  const known = !model.provider || (providers.data?.items ?? []).some((p) => p.id === model.provider);
  return (
    <section aria-labelledby="model-title" className="card">
      <h2 id="model-title">Model</h2>
      <p className="help">
        What the agent&apos;s runs call. Providers are connected on the <Link to="/model-providers">Model providers</Link> page.
      </p>
      <Alert>{providers.error && `The model providers could not be loaded: ${providers.error}`}</Alert>
      <FieldErrors errors={errors} path="model" />
      <div className="field">
        <label htmlFor={fieldId('model.provider')}>Provider</label>
        <select
          id={fieldId('model.provider')}
          value={model.provider ?? ''}
          disabled={readOnly}
          aria-invalid={errors.has('model.provider') || !known || undefined}
          aria-describedby={described('model.provider', known ? undefined : 'model-provider-unknown')}
          onChange={(e) => set({ provider: e.target.value || undefined })}
        >
          <option value="">None: the agent is not run by the platform</option>
          {(providers.data?.items ?? []).map((p) => (
            <option key={p.id} value={p.id}>
              {p.name} ({p.baseUrl})
            </option>
          ))}
          {!known && <option value={model.provider}>{model.provider} (no such provider)</option>}
        </select>
        {!known && providers.data && (
          <p id="model-provider-unknown" className="help warning">
            The draft names a provider this organization does not have: pick another before publishing.
          </p>
        )}
        <FieldErrors errors={errors} path="model.provider" />
      </div>
      <div className="field">
        <label htmlFor={fieldId('model.name')}>Model name</label>
        <input
          id={fieldId('model.name')}
          type="text"
          value={model.name ?? ''}
          readOnly={readOnly}
          spellCheck={false}
          aria-invalid={errors.has('model.name') || undefined}
          aria-describedby={described('model.name', 'model-name-help')}
          onChange={(e) => set({ name: e.target.value })}
        />
        <p id="model-name-help" className="help">
          As the provider knows it, e.g. gpt-4.1 (for Azure OpenAI, the deployment&apos;s name).
        </p>
        <FieldErrors errors={errors} path="model.name" />
      </div>
      {NUMBERS.map(({ key, label, help, step }) => {
        const path = `model.${key}`;
        return (
          <div className="field" key={key}>
            <label htmlFor={fieldId(path)}>{label}</label>
            <input
              id={fieldId(path)}
              type="number"
              step={step}
              value={model[key] ?? ''}
              readOnly={readOnly}
              aria-invalid={errors.has(path) || undefined}
              aria-describedby={described(path, `model-${key}-help`)}
              onChange={(e) => set({ [key]: e.target.value === '' ? undefined : Number(e.target.value) })}
            />
            <p id={`model-${key}-help`} className="help">
              {help}
            </p>
            <FieldErrors errors={errors} path={path} />
          </div>
        );
      })}
    </section>
  );
}
