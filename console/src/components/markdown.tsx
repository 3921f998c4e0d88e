import MarkdownIt from 'markdown-it';
import { useId, useMemo, useState } from 'react';
import { unseenIn, visibleText } from './feedback';

// Raw HTML in the source is shown as text, never rendered: instructions and prompts are written
// by people who are not necessarily trusted with the browser of the person reviewing them.
// markdown-it also refuses javascript: and data: links (validateLink).
const md = new MarkdownIt({ html: false, linkify: false, typographer: false });

// A link shows where it goes: `[https://docs.example.com](https://evil.example)` showed the first
// address and led to the second, away from the console (whose key is then forgotten, and a page
// there can ask for it again). The destination follows the text unless the text is it.
md.renderer.rules.link_close = (tokens, idx, options, _env, self) => {
  let open = idx;
  while (open > 0 && tokens[open].type !== 'link_open') open--;
  const href = String(tokens[open].attrGet('href') ?? '');
  const text = tokens
    .slice(open + 1, idx)
    .map((t) => t.content)
    .join('');
  const close = self.renderToken(tokens, idx, options);
  return text === href ? close : `${close} <span class="link-target">(${md.utils.escapeHtml(href)})</span>`;
};

/**
 * What the reader cannot see is shown as its `\uXXXX` escape before the Markdown is rendered (a
 * backslash before `u` is no Markdown escape, so it shows as written): instructions, skills and
 * documents go to a model, which reads tag characters (U+E0000 to U+E007F) and text a right-to-left
 * override reverses; drawn as they are, a reviewer read `Be kind.` where the model also read a
 * whole sentence of instructions.
 */
export function Markdown({ source }: { source: string }) {
  const html = useMemo(() => md.render(visibleText(source)), [source]);
  return <div className="markdown" dangerouslySetInnerHTML={{ __html: html }} />;
}

export interface MarkdownEditorProps {
  id: string;
  label: string;
  value: string;
  onChange(value: string): void;
  help?: string;
  /** Ids of the error and help texts the textbox is described by. */
  describedBy?: string;
  invalid?: boolean;
  rows?: number;
  maxLength?: number;
  readOnly?: boolean;
}

/** A Markdown source box with a preview toggle, for instructions and for `x-multiline` strings. */
export function MarkdownEditor(props: MarkdownEditorProps) {
  const [preview, setPreview] = useState(false);
  const helpId = useId();
  const warningId = useId();
  const unseen = useMemo(() => unseenIn(props.value), [props.value]);
  const describedBy = [props.help ? helpId : undefined, unseen.count > 0 ? warningId : undefined, props.describedBy].filter(Boolean).join(' ') || undefined;
  return (
    <div className="markdown-editor">
      <div className="markdown-editor__bar">
        <label htmlFor={props.id}>{props.label}</label>
        <div role="group" aria-label={`${props.label}: view`} className="toggle">
          <button type="button" aria-pressed={!preview} onClick={() => setPreview(false)}>
            Source
          </button>
          <button type="button" aria-pressed={preview} onClick={() => setPreview(true)}>
            Preview
          </button>
        </div>
      </div>
      {props.help && (
        <p id={helpId} className="help">
          {props.help}
        </p>
      )}
      <textarea
        id={props.id}
        hidden={preview}
        value={props.value}
        rows={props.rows ?? 10}
        maxLength={props.maxLength}
        readOnly={props.readOnly}
        aria-invalid={props.invalid || undefined}
        aria-describedby={describedBy}
        onChange={(e) => props.onChange(e.target.value)}
        spellCheck
      />
      {unseen.count > 0 && (
        // Tag characters and bidi overrides are read by models and drawn as nothing here (attack round 17, U-F3).
        <p id={warningId} className="field-warning">
          This text holds {unseen.count} {unseen.count === 1 ? 'character' : 'characters'} that show as nothing, as a blank or that turn the text around (
          {unseen.kinds.join(', ')}
          {unseen.kinds.length === 5 ? ', …' : ''}): a model reads {unseen.count === 1 ? 'it' : 'them'} as written. The preview shows each as its escape.
        </p>
      )}
      {preview && (
        <section className="markdown-preview" aria-label={`${props.label} (preview)`}>
          {props.value.trim() ? <Markdown source={props.value} /> : <p className="muted">Nothing written yet.</p>}
        </section>
      )}
    </div>
  );
}
