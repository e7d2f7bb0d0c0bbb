; LLVM 19 loop-vectoriser miscompile found by Kiln (docs/decisions.md, "the masked-load crash").
; The depthwise conv kernel of tests/regressions/conv_depthwise.toml as clang -O2 -fno-vectorize
; -mavx2 -fno-unroll-loops left it, reduced by llvm-reduce with run.sh as the test: correct
; without the loop vectoriser, a segfault with it. See run.sh.
; ModuleID = '../nv.ll'
source_filename = "dw2.c"
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

; Function Attrs: nofree noinline norecurse nosync nounwind memory(readwrite, inaccessiblemem: none) uwtable
define dso_local void @kiln_dwconv_0_loops(i64 noundef %0, i64 noundef %1, i64 noundef %2, i64 noundef %3, ptr noalias nocapture noundef readonly %4, ptr noalias nocapture noundef readonly %5, ptr noalias nocapture noundef writeonly %6, ptr noalias nocapture noundef %7) local_unnamed_addr #0 {
  %9 = add nsw i64 %0, -1
  %10 = add i64 %1, -1
  %11 = add nsw i64 %2, -1
  %12 = add nsw i64 %3, -1
  %13 = add nsw i64 %2, 1
  %14 = sdiv i64 %13, 2
  %15 = add nsw i64 %3, 1
  %16 = sdiv i64 %15, 2
  %17 = sdiv i64 %11, 2
  %18 = sdiv i64 %12, 2
  %19 = mul nsw i64 %18, %17
  %20 = mul i64 %19, %1
  %21 = mul i64 %17, %1
  %22 = mul i64 %18, %1
  %23 = shl i64 %3, 1
  %24 = udiv i64 %1, 24
  %25 = mul nuw nsw i64 %24, 9
  %26 = mul i64 %3, %2
  %27 = xor i64 %3, -1
  %28 = add nsw i64 %16, -1
  %29 = add nsw i64 %14, -1
  %30 = getelementptr float, ptr %4, i64 %27
  %31 = tail call i64 @llvm.smin.i64(i64 %9, i64 31)
  %32 = tail call i64 @llvm.smax.i64(i64 %31, i64 0)
  %33 = tail call i64 @llvm.smin.i64(i64 %10, i64 31)
  %34 = tail call i64 @llvm.smax.i64(i64 %33, i64 0)
  %35 = tail call i64 @llvm.smin.i64(i64 %29, i64 31)
  %36 = tail call i64 @llvm.smax.i64(i64 %35, i64 0)
  %37 = tail call i64 @llvm.smin.i64(i64 %28, i64 31)
  %38 = tail call i64 @llvm.smax.i64(i64 %37, i64 0)
  br label %39

39:                                               ; preds = %78, %8
  %40 = phi i64 [ 0, %8 ], [ %79, %78 ]
  %41 = mul i64 %40, %20
  %42 = mul i64 %40, %21
  %43 = mul i64 %40, %22
  %44 = mul i64 %40, %1
  %45 = getelementptr float, ptr %7, i64 %41
  %46 = getelementptr float, ptr %45, i64 %42
  %47 = getelementptr float, ptr %6, i64 %41
  %48 = getelementptr float, ptr %47, i64 %42
  br label %50

49:                                               ; preds = %78
  ret void

50:                                               ; preds = %94, %39
  %51 = phi i64 [ 0, %39 ], [ %95, %94 ]
  %52 = mul i64 %25, %51
  %53 = mul nsw i64 %51, %19
  %54 = mul nsw i64 %51, %17
  %55 = mul nsw i64 %51, %18
  %56 = getelementptr float, ptr %46, i64 %53
  %57 = getelementptr float, ptr %56, i64 %54
  %58 = getelementptr float, ptr %57, i64 %43
  %59 = getelementptr float, ptr %58, i64 %55
  %60 = getelementptr float, ptr %59, i64 %44
  %61 = getelementptr float, ptr %60, i64 %51
  %62 = getelementptr float, ptr %5, i64 %52
  %63 = mul nsw i64 %51, %19
  %64 = mul nsw i64 %51, %17
  %65 = mul nsw i64 %51, %18
  %66 = getelementptr float, ptr %46, i64 %63
  %67 = getelementptr float, ptr %66, i64 %64
  %68 = getelementptr float, ptr %67, i64 %43
  %69 = getelementptr float, ptr %68, i64 %65
  %70 = getelementptr float, ptr %69, i64 %44
  %71 = getelementptr float, ptr %70, i64 %51
  %72 = getelementptr float, ptr %48, i64 %63
  %73 = getelementptr float, ptr %72, i64 %64
  %74 = getelementptr float, ptr %73, i64 %43
  %75 = getelementptr float, ptr %74, i64 %65
  %76 = getelementptr float, ptr %75, i64 %44
  %77 = getelementptr float, ptr %76, i64 %51
  br label %81

78:                                               ; preds = %94
  %79 = add nuw nsw i64 %40, 1
  %80 = icmp eq i64 %40, %32
  br i1 %80, label %49, label %39, !llvm.loop !5

81:                                               ; preds = %97, %50
  %82 = phi i64 [ 0, %50 ], [ %98, %97 ]
  %83 = mul nsw i64 %82, %18
  %84 = getelementptr float, ptr %61, i64 %83
  %85 = getelementptr float, ptr %84, i64 %82
  %86 = mul i64 %23, %82
  %87 = shl nuw nsw i64 %82, 1
  %88 = add nsw i64 %87, -1
  %89 = getelementptr float, ptr %71, i64 %83
  %90 = getelementptr float, ptr %89, i64 %82
  %91 = getelementptr float, ptr %77, i64 %83
  %92 = getelementptr float, ptr %91, i64 %82
  %93 = getelementptr float, ptr %30, i64 %86
  br label %100

94:                                               ; preds = %97
  %95 = add nuw nsw i64 %51, 1
  %96 = icmp eq i64 %51, %34
  br i1 %96, label %78, label %50, !llvm.loop !8

97:                                               ; preds = %144
  %98 = add nuw nsw i64 %82, 1
  %99 = icmp eq i64 %82, %36
  br i1 %99, label %94, label %81, !llvm.loop !9

100:                                              ; preds = %144, %81
  %101 = phi i64 [ 0, %81 ], [ %148, %144 ]
  %102 = getelementptr float, ptr %85, i64 %101
  %103 = shl nuw nsw i64 %101, 1
  %104 = add nsw i64 %103, -1
  %105 = getelementptr float, ptr %93, i64 %103
  br label %106

106:                                              ; preds = %117, %100
  %107 = phi i64 [ 0, %100 ], [ %118, %117 ]
  %108 = phi float [ 0.000000e+00, %100 ], [ %141, %117 ]
  %109 = mul nuw nsw i64 %107, 12
  %110 = getelementptr i8, ptr %62, i64 %109
  %111 = add nsw i64 %88, %107
  %112 = icmp slt i64 %111, 0
  %113 = icmp sge i64 %111, %2
  %114 = or i1 %112, %113
  %115 = mul nsw i64 %107, %3
  %116 = getelementptr float, ptr %105, i64 %115
  br label %120

117:                                              ; preds = %136
  %118 = add nuw nsw i64 %107, 1
  %119 = icmp eq i64 %118, 3
  br i1 %119, label %144, label %106, !llvm.loop !10

120:                                              ; preds = %136, %106
  %121 = phi i64 [ 0, %106 ], [ %142, %136 ]
  %122 = phi float [ %108, %106 ], [ %141, %136 ]
  %123 = add nsw i64 %104, %121
  %124 = icmp slt i64 %123, 0
  %125 = icmp sge i64 %123, %3
  %126 = or i1 %124, %125
  %127 = select i1 %126, i1 true, i1 %114
  br i1 %127, label %136, label %128

128:                                              ; preds = %120
  %129 = urem i64 %51, %24
  %130 = sub nuw nsw i64 %51, %129
  %131 = add i64 %130, %44
  %132 = mul i64 %26, %131
  %133 = getelementptr float, ptr %116, i64 %132
  %134 = getelementptr float, ptr %133, i64 %121
  %135 = load float, ptr %134, align 4, !tbaa !11
  br label %136

136:                                              ; preds = %128, %120
  %137 = phi float [ %135, %128 ], [ 0.000000e+00, %120 ]
  %138 = getelementptr float, ptr %110, i64 %121
  %139 = load float, ptr %138, align 4, !tbaa !11
  %140 = fmul float %137, %139
  %141 = fadd reassoc float %122, %140
  %142 = add nuw nsw i64 %121, 1
  %143 = icmp eq i64 %142, 3
  br i1 %143, label %117, label %120, !llvm.loop !15

144:                                              ; preds = %117
  store float %141, ptr %102, align 4, !tbaa !11
  %145 = getelementptr float, ptr %90, i64 %101
  %146 = load float, ptr %145, align 4, !tbaa !11
  %147 = getelementptr float, ptr %92, i64 %101
  store float %146, ptr %147, align 4, !tbaa !11
  %148 = add nuw nsw i64 %101, 1
  %149 = icmp eq i64 %101, %38
  br i1 %149, label %97, label %100, !llvm.loop !16

; uselistorder directives
  uselistorder i64 %17, { 3, 2, 1, 0 }
  uselistorder i64 %18, { 4, 3, 2, 1, 0 }
  uselistorder i64 %40, { 4, 5, 3, 2, 1, 0 }
  uselistorder i64 %51, { 5, 6, 7, 8, 4, 3, 2, 1, 0, 9, 10, 11, 12, 13 }
  uselistorder i64 %82, { 6, 7, 5, 4, 3, 2, 1, 0 }
  uselistorder i64 %101, { 4, 5, 3, 2, 1, 0 }
  uselistorder float %141, { 0, 2, 1 }
}

; Function Attrs: nofree norecurse nosync nounwind memory(readwrite, inaccessiblemem: none) uwtable
define dso_local void @kiln_dwconv_0(ptr noalias nocapture noundef readonly %0, ptr noalias nocapture noundef readonly %1) local_unnamed_addr #1 {
  %3 = load i64, ptr %1, align 8, !tbaa !17
  %4 = getelementptr inbounds i8, ptr %1, i64 8
  %5 = load i64, ptr %4, align 8, !tbaa !17
  %6 = getelementptr inbounds i8, ptr %1, i64 16
  %7 = load i64, ptr %6, align 8, !tbaa !17
  %8 = getelementptr inbounds i8, ptr %1, i64 24
  %9 = load i64, ptr %8, align 8, !tbaa !17
  %10 = load ptr, ptr %0, align 8, !tbaa !19
  %11 = getelementptr inbounds i8, ptr %0, i64 8
  %12 = load ptr, ptr %11, align 8, !tbaa !19
  %13 = load ptr, ptr null, align 8, !tbaa !19
  %14 = getelementptr inbounds i8, ptr %0, i64 24
  %15 = load ptr, ptr %14, align 8, !tbaa !19
  tail call void @kiln_dwconv_0_loops(i64 noundef %3, i64 noundef %5, i64 noundef %7, i64 noundef %9, ptr noundef %10, ptr noundef %12, ptr noundef %13, ptr noundef %15)
  ret void
}

; Function Attrs: nocallback nofree nosync nounwind speculatable willreturn memory(none)
declare i64 @llvm.smin.i64(i64, i64) #2

; Function Attrs: nocallback nofree nosync nounwind speculatable willreturn memory(none)
declare i64 @llvm.smax.i64(i64, i64) #2

; uselistorder directives
uselistorder ptr @llvm.smin.i64, { 3, 2, 1, 0 }
uselistorder ptr @llvm.smax.i64, { 3, 2, 1, 0 }

attributes #0 = { nofree noinline norecurse nosync nounwind memory(readwrite, inaccessiblemem: none) uwtable "min-legal-vector-width"="0" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+avx,+avx2,+cmov,+crc32,+cx8,+fxsr,+mmx,+popcnt,+sse,+sse2,+sse3,+sse4.1,+sse4.2,+ssse3,+x87,+xsave" "tune-cpu"="generic" }
attributes #1 = { nofree norecurse nosync nounwind memory(readwrite, inaccessiblemem: none) uwtable "min-legal-vector-width"="0" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+avx,+avx2,+cmov,+crc32,+cx8,+fxsr,+mmx,+popcnt,+sse,+sse2,+sse3,+sse4.1,+sse4.2,+ssse3,+x87,+xsave" "tune-cpu"="generic" }
attributes #2 = { nocallback nofree nosync nounwind speculatable willreturn memory(none) }

!llvm.module.flags = !{!0, !1, !2, !3}
!llvm.ident = !{!4}

!0 = !{i32 1, !"wchar_size", i32 4}
!1 = !{i32 8, !"PIC Level", i32 2}
!2 = !{i32 7, !"PIE Level", i32 2}
!3 = !{i32 7, !"uwtable", i32 2}
!4 = !{!"Debian clang version 19.1.7 (3~deb12u1)"}
!5 = distinct !{!5, !6, !7}
!6 = !{!"llvm.loop.mustprogress"}
!7 = !{!"llvm.loop.unroll.disable"}
!8 = distinct !{!8, !6, !7}
!9 = distinct !{!9, !6, !7}
!10 = distinct !{!10, !6, !7}
!11 = !{!12, !12, i64 0}
!12 = !{!"float", !13, i64 0}
!13 = !{!"omnipotent char", !14, i64 0}
!14 = !{!"Simple C/C++ TBAA"}
!15 = distinct !{!15, !6, !7}
!16 = distinct !{!16, !6, !7}
!17 = !{!18, !18, i64 0}
!18 = !{!"long long", !13, i64 0}
!19 = !{!20, !20, i64 0}
!20 = !{!"any pointer", !13, i64 0}
