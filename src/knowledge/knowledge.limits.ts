/**
 * The longest document text, in characters: what the REST edge accepts and what the knowledge
 * tools may ask to read, so a tool's offset can reach the end of any stored document. (The
 * request body limit bounds it in bytes too.)
 */
export const MAX_DOCUMENT_CHARS = 1024 * 1024;
