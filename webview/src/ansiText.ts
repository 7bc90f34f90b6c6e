import Anser from 'anser';
import { html, type TemplateResult } from 'lit';
import { styleMap } from 'lit/directives/style-map.js';

/**
 * Output a tool printed, with its terminal colours shown as colours (anser reads the escape
 * codes) rather than as `␛[32m`: each run of text is a span whose colour is set through the
 * DOM (never HTML from the output, never a style attribute the page's CSP would refuse).
 */
export function ansiText(text: string): TemplateResult {
  if (!text.includes('\x1b')) return html`${text}`;
  const parts = Anser.ansiToJson(text, { json: true, remove_empty: true, use_classes: false });
  return html`${parts.map((p) => {
    const style: Record<string, string> = {};
    if (p.fg) style.color = `rgb(${p.fg})`;
    if (p.bg) style['background-color'] = `rgb(${p.bg})`;
    if (p.decoration === 'bold') style['font-weight'] = 'bold';
    return Object.keys(style).length > 0 ? html`<span style=${styleMap(style)}>${p.content}</span>` : html`${p.content}`;
  })}`;
}
