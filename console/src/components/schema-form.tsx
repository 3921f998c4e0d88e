import { useEffect, useId, useState } from 'react';
import { errorId, fieldId, type ErrorMap } from './feedback';
import { MarkdownEditor } from './markdown';

/** The part of JSON Schema (draft 2020-12) capability configs use, plus the two form hints they carry. */
export interface JsonSchema {
  type?: string | string[];
  title?: string;
  description?: string;
  default?: unknown;
  enum?: unknown[];
  'x-enum-labels'?: Record<string, string>;
  'x-multiline'?: boolean;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  examples?: unknown[];
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema;
  required?: string[];
}

type Config = Record<string, unknown>;

export interface SchemaFormProps {
  schema: JsonSchema;
  /** What is stored: only the fields somebody edited. A missing field shows (and means) its default. */
  value: Config;
  onChange(value: Config): void;
  /** The error path of this object, e.g. `capabilities[0].config`. */
  path: string;
  errors: ErrorMap;
  disabled?: boolean;
}

function typeOf(schema: JsonSchema): string | undefined {
  return Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
}

/** The errors a field shows: its own path's, and those of anything inside it (an array's items). */
function errorsUnder(errors: ErrorMap, path: string): string[] {
  const out: string[] = [];
  for (const [p, list] of errors) {
    if (p === path || p.startsWith(path + '.') || p.startsWith(path + '[')) out.push(...list.map((e) => e.message));
  }
  return out;
}

/**
 * A configuration form generated from a capability's JSON Schema. One control per property:
 * enums as selects whose options read `x-enum-labels`, `x-multiline` strings in the Markdown
 * editor, numbers, booleans, string lists, nested objects as fieldsets; anything else as JSON.
 * Each is labelled by the property's `title` (else its name) with its `description` as help, and
 * shows its default as its value without storing it.
 */
export function SchemaForm({ schema, value, onChange, path, errors, disabled }: SchemaFormProps) {
  const properties = Object.entries(schema.properties ?? {});
  if (properties.length === 0) return <p className="muted">Nothing to configure.</p>;
  return (
    <div className="schema-form">
      {properties.map(([name, property]) => (
        <SchemaField
          key={name}
          name={name}
          schema={property}
          path={`${path}.${name}`}
          stored={Object.prototype.hasOwnProperty.call(value, name)}
          value={Object.prototype.hasOwnProperty.call(value, name) ? value[name] : property.default}
          errors={errors}
          disabled={disabled}
          onChange={(next) => onChange({ ...value, [name]: next })}
          onReset={() => {
            const rest = { ...value };
            delete rest[name];
            onChange(rest);
          }}
        />
      ))}
    </div>
  );
}

interface FieldProps {
  name: string;
  schema: JsonSchema;
  path: string;
  value: unknown;
  stored: boolean;
  errors: ErrorMap;
  disabled?: boolean;
  onChange(value: unknown): void;
  onReset(): void;
}

function SchemaField(props: FieldProps) {
  const { schema, path, errors } = props;
  const label = schema.title ?? props.name;
  const id = fieldId(path);
  const helpId = useId();
  const messages = errorsUnder(errors, path);
  const invalid = messages.length > 0;
  const describedBy = [schema.description ? helpId : undefined, invalid ? errorId(path) : undefined].filter(Boolean).join(' ') || undefined;
  const aria = { id, 'aria-invalid': invalid || undefined, 'aria-describedby': describedBy, disabled: props.disabled };
  const type = typeOf(schema);
  const help = schema.description ? (
    <p id={helpId} className="help">
      {schema.description}
    </p>
  ) : null;
  const error = invalid ? (
    <p id={errorId(path)} className="field-error">
      {messages.join(' ')}
    </p>
  ) : null;
  const reset =
    props.stored && schema.default !== undefined && !props.disabled ? (
      <button type="button" className="link-button" onClick={props.onReset}>
        Reset {label} to its default
      </button>
    ) : null;

  if (type === 'object' && schema.properties) {
    return (
      <fieldset className="nested" aria-describedby={describedBy}>
        <legend>{label}</legend>
        {help}
        {error}
        <SchemaForm
          schema={schema}
          value={(props.value && typeof props.value === 'object' ? props.value : {}) as Config}
          onChange={props.onChange}
          path={path}
          errors={errors}
          disabled={props.disabled}
        />
      </fieldset>
    );
  }

  if (type === 'boolean') {
    return (
      <div className="field field--check">
        <input type="checkbox" {...aria} checked={props.value === true} onChange={(e) => props.onChange(e.target.checked)} />
        <label htmlFor={id}>{label}</label>
        {help}
        {error}
        {reset}
      </div>
    );
  }

  let control;
  if (schema.enum) {
    const labels = schema['x-enum-labels'] ?? {};
    const options = schema.enum;
    const index = options.findIndex((o) => o === props.value);
    control = (
      <select {...aria} value={index < 0 ? '' : String(index)} onChange={(e) => props.onChange(options[Number(e.target.value)])}>
        {index < 0 && <option value="">Choose…</option>}
        {options.map((option, i) => (
          <option key={i} value={String(i)}>
            {labels[String(option)] ?? String(option)}
          </option>
        ))}
      </select>
    );
  } else if (type === 'integer' || type === 'number') {
    control = <NumberInput aria={aria} schema={schema} integer={type === 'integer'} value={props.value} onChange={props.onChange} />;
  } else if (type === 'string' && schema['x-multiline']) {
    return (
      <div className="field">
        <MarkdownEditor
          id={id}
          label={label}
          help={schema.description}
          value={typeof props.value === 'string' ? props.value : ''}
          onChange={props.onChange}
          invalid={invalid}
          describedBy={invalid ? errorId(path) : undefined}
          maxLength={schema.maxLength}
          readOnly={props.disabled}
        />
        {error}
        {reset}
      </div>
    );
  } else if (type === 'string') {
    const listId = schema.examples?.length ? `${id}-examples` : undefined;
    control = (
      <>
        <input
          type="text"
          {...aria}
          list={listId}
          value={typeof props.value === 'string' ? props.value : ''}
          maxLength={schema.maxLength}
          onChange={(e) => props.onChange(e.target.value)}
        />
        {listId && (
          <datalist id={listId}>
            {schema.examples!.map((ex) => (
              <option key={String(ex)} value={String(ex)} />
            ))}
          </datalist>
        )}
      </>
    );
  } else if (type === 'array' && schema.items?.enum) {
    const labels = schema.items['x-enum-labels'] ?? {};
    const chosen = Array.isArray(props.value) ? props.value : [];
    return (
      <fieldset className="field" aria-describedby={describedBy} aria-invalid={invalid || undefined}>
        <legend>{label}</legend>
        {help}
        {schema.items.enum.map((option, i) => (
          <div key={i} className="field--check">
            <input
              type="checkbox"
              id={`${id}-${i}`}
              disabled={props.disabled}
              checked={chosen.includes(option)}
              onChange={(e) => props.onChange(e.target.checked ? [...chosen, option] : chosen.filter((c) => c !== option))}
            />
            <label htmlFor={`${id}-${i}`}>{labels[String(option)] ?? String(option)}</label>
          </div>
        ))}
        {error}
        {reset}
      </fieldset>
    );
  } else if (type === 'array' && typeOf(schema.items ?? {}) === 'string') {
    control = (
      <textarea
        {...aria}
        rows={4}
        value={Array.isArray(props.value) ? props.value.join('\n') : ''}
        onChange={(e) => props.onChange(e.target.value.split('\n').filter((line) => line !== ''))}
      />
    );
  } else {
    control = <JsonInput aria={aria} value={props.value} onChange={props.onChange} />;
  }
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {help}
      {control}
      {error}
      {reset}
    </div>
  );
}

type AriaProps = { id: string; 'aria-invalid'?: boolean; 'aria-describedby'?: string; disabled?: boolean };

/**
 * Keeps what is typed while it is not a number yet (an emptied box, a lone minus) instead of
 * snapping back to the default; stores a number as soon as the text is one. What the schema's
 * bounds say is left to the server's validation, so its message is the one shown.
 */
function NumberInput({
  aria,
  schema,
  integer,
  value,
  onChange,
}: {
  aria: AriaProps;
  schema: JsonSchema;
  integer: boolean;
  value: unknown;
  onChange(v: unknown): void;
}) {
  const [text, setText] = useState(value === undefined || value === null ? '' : String(value));
  useEffect(() => {
    setText((current) => (Number(current) === value && current.trim() !== '' ? current : value === undefined || value === null ? '' : String(value)));
  }, [value]);
  return (
    <input
      type="number"
      {...aria}
      inputMode={integer ? 'numeric' : 'decimal'}
      step={integer ? 1 : 'any'}
      min={schema.minimum}
      max={schema.maximum}
      value={text}
      onChange={(e) => {
        setText(e.target.value);
        if (e.target.value.trim() !== '' && Number.isFinite(Number(e.target.value))) onChange(Number(e.target.value));
      }}
    />
  );
}

/** The fallback for a shape the generator does not draw: the value as JSON, stored once it parses. */
function JsonInput({ aria, value, onChange }: { aria: AriaProps; value: unknown; onChange(v: unknown): void }) {
  const [text, setText] = useState(value === undefined ? '' : JSON.stringify(value, null, 2));
  const [bad, setBad] = useState(false);
  return (
    <textarea
      {...aria}
      aria-invalid={aria['aria-invalid'] || bad || undefined}
      rows={4}
      className="code"
      value={text}
      onChange={(e) => {
        setText(e.target.value);
        try {
          onChange(JSON.parse(e.target.value));
          setBad(false);
        } catch {
          setBad(true);
        }
      }}
    />
  );
}
