/** The InstanceCell protocol version, apart from its schemas so the runner's handshake needs no zod. */
export const PROTOCOL_VERSION = 'instance-cell/v1';
