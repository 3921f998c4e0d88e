import { MAX_DOCUMENT_CHARS } from './knowledge.limits';
import { OptionalNotNull } from '../common/optional-not-null';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsObject, IsOptional, IsString, MaxLength, MinLength } from 'class-validator';

export class CreateCollectionDto {
  @ApiProperty({ example: 'Product handbook', maxLength: 200 })
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  name: string;

  @ApiPropertyOptional({ maxLength: 2000, description: 'What the collection holds; a capability may show it to the model.' })
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  description?: string;
}

export class CreateDocumentDto {
  @ApiProperty({ example: 'Refund policy', maxLength: 500 })
  @IsString()
  @MinLength(1)
  @MaxLength(500)
  title: string;

  @ApiProperty({ description: 'The text, indexed for full-text search.', maxLength: MAX_DOCUMENT_CHARS })
  @IsString()
  @MaxLength(MAX_DOCUMENT_CHARS)
  content: string;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description: 'Free-form JSON object kept with the document; not `null` (leave it out for `{}`).',
  })
  @OptionalNotNull()
  @IsObject()
  metadata?: Record<string, unknown>;
}

export class CollectionView {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty() name: string;
  @ApiProperty({ nullable: true, type: String }) description: string | null;
  @ApiProperty({ description: 'How many documents the collection holds.' }) documentCount: number;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time' }) updatedAt: string;
}

/** A document in a list: everything but its content, which can be a megabyte. */
export class DocumentSummaryView {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'uuid' }) collectionId: string;
  @ApiProperty() title: string;
  @ApiProperty({ type: 'object', additionalProperties: true }) metadata: Record<string, unknown>;
  @ApiProperty({ description: 'Length of the content in characters.' }) contentLength: number;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
}

export class DocumentView extends DocumentSummaryView {
  @ApiProperty() content: string;
}

export class CollectionPage {
  @ApiProperty({ type: [CollectionView] }) items: CollectionView[];
  @ApiProperty({ nullable: true, type: String }) nextCursor: string | null;
}

export class DocumentPage {
  @ApiProperty({ type: [DocumentSummaryView] }) items: DocumentSummaryView[];
  @ApiProperty({ nullable: true, type: String }) nextCursor: string | null;
}
