import type { PackageDefinition } from '@grpc/proto-loader';
import type { IDescriptorProto, IFileDescriptorProto } from 'protobufjs/ext/descriptor';
import { mapFileDescriptors } from './map-entry-names';

/**
 * The definition with each reflected file importing the files whose types it uses. protobufjs
 * describes one file per package and lists no imports, so google.rpc's file, whose `RetryInfo`
 * refers to `google.protobuf.Duration`, named none, and protobuf-go (grpcurl) refused it as
 * unresolvable: a field error's google.rpc.BadRequest printed as "not recognized". Only the
 * reflected file descriptors change; nothing uses them to encode or decode.
 */
export function withImportsDeclared(definition: PackageDefinition): PackageDefinition {
  return mapFileDescriptors(definition, (file, all) => {
    const imports = new Set(file.dependency ?? []);
    for (const typeName of referencedTypes(file.messageType ?? [])) {
      const defining = all.find((other) => other !== file && candidates(typeName, file.package ?? '').some((name) => defines(other, name)));
      if (defining?.name != null) imports.add(defining.name);
    }
    file.dependency = [...imports];
  });
}

function referencedTypes(messages: readonly IDescriptorProto[]): string[] {
  return messages.flatMap((message) => [
    ...(message.field ?? []).flatMap((field) => (field.typeName == null ? [] : [field.typeName])),
    ...referencedTypes(message.nestedType ?? []),
  ]);
}

/** The full names a type name can stand for inside `scope`, innermost first (protobuf's scoping rules). */
function candidates(typeName: string, scope: string): string[] {
  if (typeName.startsWith('.')) return [typeName.slice(1)];
  const parts = scope === '' ? [] : scope.split('.');
  return parts.map((_, index) => `${parts.slice(0, parts.length - index).join('.')}.${typeName}`).concat(typeName);
}

/** Whether `file` defines the type named `fullName` at its top level (a message or an enum). */
function defines(file: IFileDescriptorProto, fullName: string): boolean {
  const prefix = file.package === undefined || file.package === '' ? '' : `${file.package}.`;
  if (!fullName.startsWith(prefix)) return false;
  const name = fullName.slice(prefix.length).split('.')[0];
  return (file.messageType ?? []).some((type) => type.name === name) || (file.enumType ?? []).some((type) => type.name === name);
}
