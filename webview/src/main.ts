// Webview UIs (attempt and instance details) arrive with the extension issue.
export const WEBVIEW_BUNDLE = 'forge-cells-webview';
