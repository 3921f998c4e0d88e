import { useState, type FormEvent, type ReactNode } from 'react';
import { messageOf, ProblemError, type FieldError } from '../api/client';
import { Alert, errorMap, FieldErrors, fieldErrorProps, fieldId } from './feedback';
import { MarkdownEditor } from './markdown';

export interface SimpleField {
  name: string;
  label: string;
  /** `secret`: typed unseen and never offered by the browser's autofill (an API key). */
  kind?: 'text' | 'textarea' | 'markdown' | 'secret';
  required?: boolean;
  help?: string;
}

/**
 * A small create form whose refusals (`errors[]` by path) land next to their fields. Values are
 * strings; `submit` maps them onto the request and throws the API's ProblemError.
 */
export function SimpleForm({
  title,
  fields,
  submitLabel,
  submit,
  children,
}: {
  title: string;
  fields: SimpleField[];
  submitLabel: string;
  submit(values: Record<string, string>): Promise<void>;
  children?: ReactNode;
}) {
  const empty = Object.fromEntries(fields.map((f) => [f.name, '']));
  const [values, setValues] = useState<Record<string, string>>(empty);
  const [errors, setErrors] = useState<FieldError[]>([]);
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const map = errorMap(errors);
  const titleId = `form-${title.replace(/\W+/g, '-').toLowerCase()}`;
  const onSubmit = async (e: FormEvent) => {
    e.preventDefault();
    setErrors([]);
    setError(undefined);
    const missing = fields.filter((f) => f.required && !values[f.name].trim()).map((f) => ({ path: f.name, message: `${f.label} is required.` }));
    if (missing.length) return setErrors(missing);
    setBusy(true);
    try {
      await submit(values);
      setValues(empty);
    } catch (err) {
      if (err instanceof ProblemError && err.problem.errors?.length) setErrors(err.problem.errors);
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form className="card" onSubmit={onSubmit} aria-labelledby={titleId} noValidate>
      <h2 id={titleId}>{title}</h2>
      <Alert>{error}</Alert>
      {fields.map((f) => {
        const id = fieldId(f.name);
        const set = (v: string) => setValues((old) => ({ ...old, [f.name]: v }));
        const aria = fieldErrorProps(map, f.name);
        if (f.kind === 'markdown') {
          return (
            <div className="field" key={f.name}>
              <MarkdownEditor
                id={id}
                label={f.label}
                help={f.help}
                value={values[f.name]}
                onChange={set}
                invalid={map.has(f.name)}
                describedBy={aria['aria-describedby']}
                rows={6}
              />
              <FieldErrors errors={map} path={f.name} />
            </div>
          );
        }
        return (
          <div className="field" key={f.name}>
            <label htmlFor={id}>{f.label}</label>
            {f.kind === 'textarea' ? (
              <textarea id={id} rows={6} value={values[f.name]} onChange={(e) => set(e.target.value)} {...aria} />
            ) : (
              <input
                id={id}
                type={f.kind === 'secret' ? 'password' : 'text'}
                autoComplete={f.kind === 'secret' ? 'off' : undefined}
                spellCheck={f.kind === 'secret' ? false : undefined}
                value={values[f.name]}
                onChange={(e) => set(e.target.value)}
                {...aria}
                aria-describedby={[f.help ? `${id}-help` : '', aria['aria-describedby'] ?? ''].filter(Boolean).join(' ') || undefined}
              />
            )}
            {f.help && (
              <p id={`${id}-help`} className="help">
                {f.help}
              </p>
            )}
            <FieldErrors errors={map} path={f.name} />
          </div>
        );
      })}
      {children}
      <div className="actions">
        <button type="submit" className="primary" disabled={busy}>
          {submitLabel}
        </button>
      </div>
    </form>
  );
}
